// The chat app's entry: opens the stores and the browser host, wires the shell, the conversation and its header, the
// composer, the conversation list, the panels and the keyboard; browser app, trusted side.
import '../zod-jitless.js';
import './app.css';
import { createBrowserHost, type BrowserHost } from '../host.js';
import { PYODIDE_MANIFEST } from '../python/pyodide-manifest.js';
import { AppDb, settingsFromUrl, type AppSettings, type LinkOverride } from './app-db.js';
import { ConversationTree } from './chat/tree.js';
import { ToolRunner } from './chat/tool-runner.js';
import { Interruption } from './chat/turn.js';
import { recoverTurn } from './chat/recover.js';
import { RESEND, TurnDriver, type Resend } from './chat/driver.js';
import { APP_SENTENCE } from './chat/system.js';
import { downloadJson, h, replaceChildren } from './dom.js';
import { ConversationView, type BranchInfo } from './ui/conversation.js';
import { mountInlineApprovals } from './ui/approvals.js';
import { toolsPanel } from './ui/tools-panel.js';
import { auditPanel } from './ui/audit-panel.js';
import { Shell, applyTheme, type Theme } from './ui/shell.js';
import { Toast } from './ui/toast.js';
import { exportConversation, importConversation } from './chat/transfer.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { Task } from '../../protocol/task.js';
import { exampleTools } from './examples.js';
import { HOST_TOOL_NAMES, installHostTools } from './host-tools.js';
import { mountEmbedding } from './embed.js';
import { SecretGrants } from '../../core/capabilities/secrets.js';
import './protocol-embed.js';
import { PythonProgressBar } from './ui/python-progress.js';
import { ConnectOrigins, connectSource } from './connect.js';
import { AttachmentTray, LIMITS_TEXT } from './attachments/tray.js';
import { ConversationManager } from './conversations/manager.js';
import { ConversationHeader } from './conversations/header.js';
import { ConversationSettingsBox } from './conversations/settings-box.js';
import { purgeDeleted } from './conversations/purge.js';
import { installShortcuts, ShortcutsDialog } from './keyboard/shortcuts.js';
import { Connections } from './providers/connections.js';
import { ModelMenu } from './providers/model-menu.js';
import { openSettingsPanel, readSession, REOPEN, testConnection } from './settings/open.js';
import { keyForEndpoint } from './providers/key-question.js';

declare global {
  interface Window {
    /** Set when the app is interactive (tests and benchmarks wait on it). */
    tyAppReady?: boolean;
  }
}

/** Files attached but never sent are dropped after this long (ms). */
const UNSENT_FILE_MS = 24 * 3600_000;

class App {
  #tree!: ConversationTree;
  /** A conversation switch in progress: a Send waits for it, so the message lands in the conversation shown. */
  #switching: Promise<void> = Promise.resolve();
  readonly view: ConversationView;
  readonly message = h('textarea', {
    id: 'message',
    rows: 2,
    placeholder: 'Ask something; tools run in a sandbox in this page',
  });
  readonly send = h('button', { type: 'submit', class: 'primary' }, 'Send');
  readonly stop = h('button', { type: 'button', disabled: true }, 'Stop');
  readonly editNote = h('p', { class: 'edit-note', hidden: true });
  readonly python = new PythonProgressBar();
  readonly toast = new Toast();
  readonly importFile = h('input', {
    type: 'file',
    accept: '.json,application/json',
    class: 'visually-hidden',
    id: 'import-file',
  });
  readonly importInput = h('label', { class: 'button-like', for: 'import-file' }, 'Import', this.importFile);
  readonly shortcuts = new ShortcutsDialog();
  readonly tray: AttachmentTray;
  readonly manager: ConversationManager;
  readonly header: ConversationHeader;
  readonly modelMenu: ModelMenu;
  readonly convSettings: ConversationSettingsBox;
  readonly driver: TurnDriver;
  shell!: Shell;
  host!: BrowserHost;
  runner!: ToolRunner;
  connect!: ConnectOrigins;
  connections!: Connections;
  /** Pins calls: a remote MCP server's SERVER__TOOL to its offered revision, every other name through the registry. */
  readonly resolver = {
    resolve: async (ref: string) =>
      this.host.mcp.handles(ref)
        ? { ...(await this.host.mcp.resolve(ref)), active: true }
        : this.host.registry.resolve(ref),
  };
  disabledTools = new Set<string>();

  constructor(
    readonly db: AppDb,
    readonly settings: AppSettings,
    readonly link: LinkOverride,
  ) {
    const app = this;
    const d = () => this.driver;
    this.view = new ConversationView({
      edit: (t) => this.edit(t),
      switchBranch: (t, n) => void this.switchBranch(t, n),
      regenerate: (t) => void d().regenerate(t),
      continueAnswer: (t) => void d().continueAnswer(t),
      runAgain: (t) => void d().runAgain(t),
      loadFile: (sha) => this.db.getFile(sha),
    });
    this.view.plain = settings.markdown === false;
    this.tray = new AttachmentTray(db, (m, k) => this.view.notice(m, k));
    this.manager = new ConversationManager({
      db,
      store: () => this.host.store,
      current: () => this.#tree,
      busy: () => this.driver.busy !== undefined,
      open: (id) => this.openConversation(id),
      openNew: () => this.openNew(),
      changed: () => void this.refresh(),
      toast: this.toast,
    });
    this.modelMenu = new ModelMenu(
      (id, model) => void this.pickModel(id, model),
      () => this.openSettings(),
    );
    this.header = new ConversationHeader(
      {
        rename: (t) => void this.manager.rename(this.#tree.record.id, t),
        togglePin: () => void this.manager.togglePin(this.#tree.record.id),
        remove: () => void this.manager.remove(this.#tree.record.id),
      },
      this.modelMenu.root,
    );
    this.convSettings = new ConversationSettingsBox((patch) => {
      const r = this.#tree.record;
      r.systemPrompt = patch.systemPrompt ?? '';
      if (patch.temperature === undefined) delete r.temperature;
      else r.temperature = patch.temperature;
      if (patch.maxTokens === undefined) delete r.maxTokens;
      else r.maxTokens = patch.maxTokens;
      void this.#tree.save(false);
    });
    this.driver = new TurnDriver({
      db,
      settings,
      link,
      view: this.view,
      tray: this.tray,
      manager: this.manager,
      message: this.message,
      send: this.send,
      stop: this.stop,
      editNote: this.editNote,
      get host() {
        return app.host;
      },
      get connections() {
        return app.connections;
      },
      get connect() {
        return app.connect;
      },
      get runner() {
        return app.runner;
      },
      resolver: this.resolver,
      tree: () => this.#tree,
      switching: () => this.#switching,
      refresh: () => this.refresh(),
      openSettings: () => this.openSettings(),
      markRuntime: (c) => void this.markRuntime(c),
    });
  }

  async start(): Promise<void> {
    applyTheme(await this.db.getValue<Theme>('theme'));
    this.host = await createBrowserHost({
      dialog: false,
      secretValues: this.db.secretValues(),
      sandbox: { pyodide: PYODIDE_MANIFEST, onPythonProgress: (p) => this.onPython(p) },
    });
    this.connect = await ConnectOrigins.load();
    this.connections = await Connections.load(this.db, this.settings);
    this.connections.onChange(() => this.showHeader());
    await purgeDeleted(this.db, this.host.store);
    this.disabledTools = new Set((await this.db.getValue<string[]>('toolsOff')) ?? []);
    const { restoreMcpServers } = await import('./settings/mcp.js');
    await restoreMcpServers(this.db, this.host.mcp);
    // Questions are answered inline, in the conversation (the host's built-in dialog is off).
    mountInlineApprovals(
      this.host.approvals,
      (rev, tool) => this.view.placeFor(rev, tool),
      (place, open) => this.view.asking(place, open),
    );
    this.runner = new ToolRunner(
      this.host,
      () => this.disabledTools,
      (sha) => this.db.getFile(sha),
    );
    if (!this.settings.examplesOffered) {
      for (const m of await exampleTools()) await this.host.registry.install(m);
      this.settings.examplesOffered = true;
      await this.db.putSettings(this.settings);
    }
    // The built-in host tools are installed once but not offered to the model until the person switches them on.
    await installHostTools(this.host, { install: !this.settings.hostToolsOffered });
    if (!this.settings.hostToolsOffered) {
      for (const name of HOST_TOOL_NAMES) this.disabledTools.add(name);
      await this.db.putValue('toolsOff', [...this.disabledTools]);
      this.settings.hostToolsOffered = true;
      await this.db.putSettings(this.settings);
    }
    // Fetch and verify Pyodide's files in the background when a Python tool is on offer, so its first call is faster.
    if (
      (await this.runner.offeredTools()).some(
        (m) => m.execution.kind === 'sandboxed-code' && m.execution.runtime === 'python',
      )
    )
      void this.host.prewarm('python').catch(() => {});
    const resend = readSession<Resend>(RESEND);
    await this.db.dropUnsentFiles(Date.now() - UNSENT_FILE_MS, new Set(resend?.attachments?.map((f) => f.sha256)));
    const last = (await this.db.listConversations()).find((c) => c.deleted === undefined);
    const current = resend?.conversation ?? (await this.db.getValue<string>('current'));
    this.#tree =
      (current ? await ConversationTree.open(this.host.store, this.db, current) : undefined) ??
      (last ? await ConversationTree.open(this.host.store, this.db, last.id) : undefined) ??
      (await this.newTree());
    await recoverTurn(this.#tree, this.db, this.resolver);
    this.layout();
    await this.refresh();
    if (this.link.endpoint)
      this.view.notice(
        `This page was opened with a link that sends this visit's messages to ${connectSource(this.link.endpoint) ?? this.link.endpoint}.`,
        'info',
      );
    mountEmbedding({ host: this.host, allowedOrigins: () => this.settings.embeddingOrigins });
    // Leaving the page: questions are withdrawn, calls in flight end as interrupted, the streamed text is written.
    addEventListener('pagehide', () => {
      this.driver.busy?.abort(new Interruption());
      void this.driver.journal?.flush();
    });
    const panel = readSession<string>(REOPEN);
    if (panel) this.shell.openPanel(panel);
    if (resend) void this.driver.submit(resend);
  }

  async newTree(): Promise<ConversationTree> {
    const t = await ConversationTree.create(this.host.store, this.db, { systemPrompt: this.settings.systemPrompt });
    await this.db.putValue('current', t.record.id);
    return t;
  }

  layout(): void {
    const form = h(
      'form',
      { class: 'composer', 'aria-label': 'Composer' },
      this.editNote,
      this.tray.chips,
      h('label', { for: 'message', class: 'visually-hidden' }, 'Message'),
      this.message,
      h(
        'div',
        { class: 'composer-buttons' },
        h('span', { class: 'attach-limits', title: LIMITS_TEXT }, this.tray.button),
        this.send,
        this.stop,
      ),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.driver.submit();
    });
    this.message.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        void this.driver.submit();
      }
    });
    this.tray.pasteInto(this.message);
    this.stop.addEventListener('click', () => this.driver.busy?.abort());
    this.importFile.addEventListener('change', () => {
      const f = this.importFile.files?.[0];
      this.importFile.value = '';
      if (f) void this.importFrom(f);
    });
    const shortcutsButton = h('button', { type: 'button' }, 'Keyboard shortcuts');
    shortcutsButton.addEventListener('click', () => this.shortcuts.open());
    const main = [this.header.root, this.view.root, this.toast.root, form];
    this.shell = new Shell(document.getElementById('app')!, {
      lead: [h('button', { type: 'button', onclick: () => void this.openNew() }, 'New conversation')],
      panels: [
        { label: 'Settings', make: () => openSettingsPanel(this) },
        {
          label: 'Tools',
          make: () =>
            toolsPanel({
              registry: this.host.registry,
              tools: this.host.tools,
              grants: new SecretGrants(this.host.store),
              disabled: this.disabledTools,
              saveDisabled: () => this.db.putValue('toolsOff', [...this.disabledTools]),
              defineInConversation: (m) => this.defineTool(m),
            }),
        },
        { label: 'Audit', make: () => auditPanel(this.host), secondary: true },
      ],
      tail: [
        h('button', { type: 'button', onclick: () => void this.exportCurrent() }, 'Export'),
        this.importInput,
        shortcutsButton,
      ],
      conversations: this.manager.elements,
      main,
      focusMessage: () => this.message.focus(),
      saveTheme: (t) => void this.db.putValue('theme', t),
    });
    this.tray.dropOn(document.querySelector('main')!);
    this.view.setTop(this.convSettings.root);
    installShortcuts(document, {
      search: () => {
        if (this.shell.narrow()) this.shell.drawer(true, this.manager.search);
        this.manager.search.focus();
        this.manager.search.select();
      },
      newConversation: () => void this.openNew(),
      focusMessage: () => this.message.focus(),
      copyLastAnswer: () => void this.copyLastAnswer(),
      showShortcuts: () => this.shortcuts.open(),
    });
    document.getElementById('app')!.removeAttribute('aria-busy');
  }

  /** Open Settings (on the current conversation's connection). */
  openSettings(): void {
    if (this.shell.openLabel !== 'Settings') this.shell.openPanel('Settings');
  }

  /** The person picked a connection and model in the Model menu: this conversation's, and the default of new ones. */
  async pickModel(id: string, model: string): Promise<void> {
    await this.connections.pick(this.#tree.record, id, model);
    await this.#tree.save(false);
    this.showHeader();
    this.toast.show(`This conversation now uses ${model} (${this.connections.get(id)?.name ?? ''}).`);
  }

  /** Copy the last answer of the branch shown (its text as the model wrote it). */
  async copyLastAnswer(): Promise<void> {
    const last = (await this.#tree.path())
      .reverse()
      .find((t) => t.role === 'assistant' && t.content.type === 'message' && t.content.text.trim());
    if (last?.content.type !== 'message') return this.toast.show('There is no answer to copy yet.');
    try {
      await navigator.clipboard.writeText(last.content.text);
      this.toast.show('Copied the last answer.');
    } catch {
      this.toast.show('Copy failed: the browser refused the clipboard.');
    }
  }

  /** Python's start-up progress, shown only in the card of the Python call that is starting it. */
  onPython(p: Parameters<PythonProgressBar['update']>[0]): void {
    const card = this.view.root.querySelector<HTMLElement>(
      '.call[data-runtime="python"]:not([data-outcome]) .progress-slot',
    );
    if (!card) return this.python.done();
    if (this.python.element.parentElement !== card) card.replaceChildren(this.python.element);
    this.python.update(p);
  }

  /** Add a tooldefinition task at the end of the selected branch: only what comes after it there can call the tool. */
  async defineTool(m: ToolManifest): Promise<void> {
    if (this.driver.busy) throw new Error('wait until the current turn ends');
    await this.#tree.append(
      this.#tree.record.leaf,
      [{ role: 'system', content: { type: 'tooldefinition', definition: { manifest: m } } }],
      this.host.registry,
    );
    await this.refresh();
  }

  async exportCurrent(): Promise<void> {
    const name = `${this.#tree.record.title.replace(/[^\w.-]+/g, '-').slice(0, 40) || 'conversation'}.json`;
    downloadJson(name, await exportConversation(this.#tree));
  }

  async importFrom(file: File): Promise<void> {
    try {
      const rec = await importConversation(await file.text(), this.host.store, this.db);
      await this.openConversation(rec.id);
      this.view.notice(`Imported "${rec.title}".`, 'info');
    } catch (e) {
      this.view.notice(`Import failed: ${e instanceof Error ? e.message : String(e)}`, 'error');
    }
  }

  /** Switch conversations; a Send pressed meanwhile waits for the switch (`switching`). */
  #switch(to: () => Promise<ConversationTree | undefined>): Promise<void> {
    if (this.driver.busy) return this.#switching;
    this.driver.cancelRetry();
    this.#switching = this.#switching.then(async () => {
      const t = await to();
      if (!t) return;
      this.#tree = t;
      await this.db.putValue('current', t.record.id);
      await recoverTurn(t, this.db, this.resolver);
      this.driver.editing = undefined;
      this.editNote.hidden = true;
      this.view.clearNotices();
      this.shell.drawer(false);
      await this.refresh();
    });
    return this.#switching;
  }

  /** A new conversation; focus goes to the message box. */
  async openNew(): Promise<void> {
    await this.#switch(() => this.newTree());
    this.message.focus();
  }

  openConversation(id: string): Promise<void> {
    return this.#switch(() => ConversationTree.open(this.host.store, this.db, id));
  }

  /** The conversation header, its Model menu and its settings box, for the conversation shown. */
  showHeader(): void {
    const r = this.#tree.record;
    this.header.show(r);
    this.modelMenu.show(this.driver.choice(), this.connections.all());
    void this.#tree.task(r.root).then((root) => {
      const text = root.content.type === 'message' ? root.content.text : APP_SENTENCE;
      this.convSettings.show(r, text);
    });
  }

  async refresh(): Promise<void> {
    const path = await this.#tree.path();
    const branches = new Map<string, BranchInfo>();
    for (const t of path) {
      if (t.parent === undefined) continue;
      const sib = this.#tree.children(t.parent);
      if (sib.length > 1) branches.set(t.id, { index: sib.indexOf(t.id), count: sib.length });
    }
    const r = this.#tree.record;
    this.view.render(path, branches, new Set(r.interrupted ?? []), r.replies ?? {});
    this.showHeader();
    await this.manager.render();
  }

  edit(t: Task): void {
    if (this.driver.busy || t.content.type !== 'message') return;
    this.driver.editing = t;
    this.message.value = t.content.text;
    void this.tray.restore(t.content.attachments ?? []);
    this.editNote.hidden = false;
    this.editNote.textContent = 'Editing a message: Send makes a new branch beside the old one.';
    this.message.focus();
  }

  async switchBranch(t: Task, delta: number): Promise<void> {
    if (this.driver.busy || t.parent === undefined) return;
    const sib = this.#tree.children(t.parent);
    const next = sib[sib.indexOf(t.id) + delta];
    if (!next) return;
    await this.#tree.select(next);
    await recoverTurn(this.#tree, this.db, this.resolver);
    await this.refresh();
  }

  async markRuntime(c: Task): Promise<void> {
    if (c.content.type !== 'functioncall' || !c.content.toolRevision) return;
    try {
      const { manifest } = await this.resolver.resolve(`${c.content.name}@${c.content.toolRevision}`);
      const ex = manifest.execution;
      const card = this.view.card(c.id);
      if (card && ex.kind === 'sandboxed-code') card.dataset.runtime = ex.runtime;
    } catch {
      /* a call to an unknown revision fails on its own */
    }
  }

  /** Test a connection from Settings (settings/open.ts). */
  testConnection(c: Parameters<typeof testConnection>[1], place: HTMLElement): Promise<string[]> {
    return testConnection(this, c, place, keyForEndpoint);
  }
}

async function boot(): Promise<void> {
  const db = await AppDb.open();
  const app = new App(db, await db.getSettings(), settingsFromUrl(location.search));
  await app.start();
  window.tyAppReady = true;
}

boot().catch((e: unknown) => {
  const el = document.getElementById('app');
  if (el)
    replaceChildren(
      el,
      h('p', { role: 'alert' }, `The app could not start: ${e instanceof Error ? e.message : String(e)}`),
    );
});
