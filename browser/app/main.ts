// The chat app's entry: opens the stores and the browser host, wires the shell, conversation, composer and panels;
// browser app, trusted side.
import '../zod-jitless.js';
import './app.css';
import { createBrowserHost, type BrowserHost } from '../host.js';
import { PYODIDE_MANIFEST } from '../python/pyodide-manifest.js';
import { AppDb, settingsFromUrl, type AppSettings } from './app-db.js';
import { ConversationTree } from './chat/tree.js';
import { ToolRunner } from './chat/tool-runner.js';
import { Interruption, runCalls, runTurn } from './chat/turn.js';
import { TurnJournal } from './chat/journal.js';
import { recoverTurn } from './chat/recover.js';
import { planRerun } from './chat/rerun.js';
import { downloadJson, h, replaceChildren } from './dom.js';
import { ConversationView, type BranchInfo } from './ui/conversation.js';
import { mountInlineApprovals } from './ui/approvals.js';
import { settingsPanel } from './ui/settings-panel.js';
import { toolsPanel } from './ui/tools-panel.js';
import { auditPanel } from './ui/audit-panel.js';
import { Shell, applyTheme, showConversations, type Theme } from './ui/shell.js';
import { keyForEndpoint } from './ui/key-question.js';
import { showFailure } from './ui/failure.js';
import { exportConversation, importConversation } from './chat/transfer.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { exampleTools } from './examples.js';
import { HOST_TOOL_NAMES, installHostTools } from './host-tools.js';
import { mountEmbedding } from './embed.js';
import { SecretGrants } from '../../core/capabilities/secrets.js';
import './protocol-embed.js';
import { PythonProgressBar } from './ui/python-progress.js';
import { mcpSettingsSection, restoreMcpServers } from './ui/mcp-settings.js';
import type { Task } from '../../protocol/task.js';
import type { ModelError } from './models/types.js';
import { ConnectOrigins, connectSource, neededOrigins } from './connect.js';

declare global {
  interface Window {
    /** Set when the app is interactive (tests and benchmarks wait on it). */
    tyAppReady?: boolean;
  }
}

/** sessionStorage: a message to send again after the page reloaded to widen its connect origins. */
const RESEND = 'tysandbox-resend';
/** sessionStorage: the panel to open again after such a reload. */
const REOPEN = 'tysandbox-panel';

class App {
  tree!: ConversationTree;
  busy: AbortController | undefined;
  editing: Task | undefined;
  /** A conversation switch in progress: a Send waits for it, so the message lands in the conversation shown. */
  switching: Promise<void> = Promise.resolve();
  journal: TurnJournal | undefined;
  /** Stops a running 429 countdown. */
  stopCountdown: () => void = () => {};
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
  readonly convList = h('ul', { class: 'conv-list', 'aria-label': 'Conversations' });
  readonly importFile = h('input', {
    type: 'file',
    accept: '.json,application/json',
    class: 'visually-hidden',
    id: 'import-file',
  });
  readonly importInput = h('label', { class: 'button-like', for: 'import-file' }, 'Import', this.importFile);
  shell!: Shell;
  host!: BrowserHost;
  runner!: ToolRunner;
  connect!: ConnectOrigins;
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
  ) {
    this.view = new ConversationView({
      edit: (t) => this.edit(t),
      switchBranch: (t, d) => void this.switchBranch(t, d),
      regenerate: (t) => void this.regenerate(t),
      continueAnswer: (t) => void this.continueAnswer(t),
      runAgain: (t) => void this.runAgain(t),
    });
    this.view.plain = settings.markdown === false;
  }

  async start(): Promise<void> {
    applyTheme(await this.db.getValue<Theme>('theme'));
    this.host = await createBrowserHost({
      dialog: false,
      secretValues: this.db.secretValues(),
      sandbox: { pyodide: PYODIDE_MANIFEST, onPythonProgress: (p) => this.onPython(p) },
    });
    this.connect = await ConnectOrigins.load();
    this.disabledTools = new Set((await this.db.getValue<string[]>('toolsOff')) ?? []);
    await restoreMcpServers(this.db, this.host.mcp);
    // Questions are answered inline, in the conversation (the host's built-in dialog is off).
    mountInlineApprovals(
      this.host.approvals,
      (rev, tool) => this.view.placeFor(rev, tool),
      (place, open) => this.view.asking(place, open),
    );
    this.runner = new ToolRunner(this.host, () => this.disabledTools);
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
    const resend = readSession<{ conversation: string; text: string; parent?: string }>(RESEND);
    const last = (await this.db.listConversations())[0];
    const current = resend?.conversation ?? (await this.db.getValue<string>('current'));
    this.tree =
      (current ? await ConversationTree.open(this.host.store, this.db, current) : undefined) ??
      (last ? await ConversationTree.open(this.host.store, this.db, last.id) : undefined) ??
      (await this.newTree());
    await recoverTurn(this.tree, this.db, this.resolver);
    this.layout();
    await this.refresh();
    mountEmbedding({ host: this.host, allowedOrigins: () => this.settings.embeddingOrigins });
    // Leaving the page: questions are withdrawn, calls in flight end as interrupted, the streamed text is written.
    addEventListener('pagehide', () => {
      this.busy?.abort(new Interruption());
      void this.journal?.flush();
    });
    const panel = readSession<string>(REOPEN);
    if (panel) this.shell.openPanel(panel);
    if (resend) {
      this.message.value = resend.text;
      void this.submit(resend.parent);
    }
  }

  async newTree(): Promise<ConversationTree> {
    const t = await ConversationTree.create(this.host.store, this.db);
    await this.db.putValue('current', t.record.id);
    return t;
  }

  layout(): void {
    const form = h(
      'form',
      { class: 'composer', 'aria-label': 'Composer' },
      this.editNote,
      h('label', { for: 'message', class: 'visually-hidden' }, 'Message'),
      this.message,
      h('div', { class: 'composer-buttons' }, this.send, this.stop),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.submit();
    });
    this.message.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        void this.submit();
      }
    });
    this.stop.addEventListener('click', () => this.busy?.abort());
    this.importFile.addEventListener('change', () => {
      const f = this.importFile.files?.[0];
      this.importFile.value = '';
      if (f) void this.importFrom(f);
    });
    this.shell = new Shell(document.getElementById('app')!, {
      lead: [h('button', { type: 'button', onclick: () => void this.openNew() }, 'New conversation')],
      panels: [
        {
          label: 'Settings',
          make: () => {
            const panel = settingsPanel(this.db, this.settings, () => {
              this.view.plain = this.settings.markdown === false;
            });
            panel.append(mcpSettingsSection(this.db, this.host.mcp, () => void this.widenForMcp()));
            return panel;
          },
        },
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
        { label: 'Audit', make: () => auditPanel(this.host) },
      ],
      tail: [h('button', { type: 'button', onclick: () => void this.exportCurrent() }, 'Export'), this.importInput],
      conversations: this.convList,
      main: [this.view.root, form],
      saveTheme: (t) => void this.db.putValue('theme', t),
    });
    document.getElementById('app')!.removeAttribute('aria-busy');
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
    if (this.busy) throw new Error('wait until the current turn ends');
    await this.tree.append(
      this.tree.record.leaf,
      [{ role: 'system', content: { type: 'tooldefinition', definition: { manifest: m } } }],
      this.host.registry,
    );
    await this.refresh();
  }

  async exportCurrent(): Promise<void> {
    const name = `${this.tree.record.title.replace(/[^\w.-]+/g, '-').slice(0, 40) || 'conversation'}.json`;
    downloadJson(name, await exportConversation(this.tree));
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
    if (this.busy) return this.switching;
    this.cancelRetry();
    this.switching = this.switching.then(async () => {
      const t = await to();
      if (!t) return;
      this.tree = t;
      await this.db.putValue('current', t.record.id);
      await recoverTurn(t, this.db, this.resolver);
      this.editing = undefined;
      this.editNote.hidden = true;
      this.view.clearNotices();
      this.shell.drawer(false);
      await this.refresh();
    });
    return this.switching;
  }

  openNew(): Promise<void> {
    return this.#switch(() => this.newTree());
  }

  openConversation(id: string): Promise<void> {
    return this.#switch(() => ConversationTree.open(this.host.store, this.db, id));
  }

  async refresh(): Promise<void> {
    const path = await this.tree.path();
    const branches = new Map<string, BranchInfo>();
    for (const t of path) {
      if (t.parent === undefined) continue;
      const sib = this.tree.children(t.parent);
      if (sib.length > 1) branches.set(t.id, { index: sib.indexOf(t.id), count: sib.length });
    }
    this.view.render(path, branches, new Set(this.tree.record.interrupted ?? []));
    showConversations(this.convList, await this.db.listConversations(), this.tree.record.id, (id) =>
      this.openConversation(id),
    );
  }

  edit(t: Task): void {
    if (this.busy || t.content.type !== 'message') return;
    this.editing = t;
    this.message.value = t.content.text;
    this.editNote.hidden = false;
    this.editNote.textContent = 'Editing a message: Send makes a new branch beside the old one.';
    this.message.focus();
  }

  async switchBranch(t: Task, delta: number): Promise<void> {
    if (this.busy || t.parent === undefined) return;
    const sib = this.tree.children(t.parent);
    const next = sib[sib.indexOf(t.id) + delta];
    if (!next) return;
    await this.tree.select(next);
    await recoverTurn(this.tree, this.db, this.resolver);
    await this.refresh();
  }

  /** The key for this request, after asking when the endpoint's origin is not one it was confirmed for. */
  keyForRequest(): Promise<string | undefined> {
    return keyForEndpoint(this.db, this.settings.endpoint, this.view.placeFor(undefined));
  }

  /** The origins the next turn needs: the endpoint's, and every offered tool's fetch origins. */
  async neededOrigins(): Promise<string[]> {
    return neededOrigins(this.settings.endpoint, await this.runner.offeredTools());
  }

  /** Widen the page's connect origins for the MCP servers, reloading into the same panel when needed. */
  async widenForMcp(): Promise<void> {
    const need = this.host.mcp.servers().flatMap((s) => connectSource(s.url) ?? []);
    if (this.busy || !this.connect.reloadFor(need) || !(await this.connect.widen(need).catch(() => false))) return;
    sessionStorage.setItem(REOPEN, JSON.stringify(this.shell.openLabel ?? 'Settings'));
    location.reload();
  }

  async submit(resendParent?: string): Promise<void> {
    const text = this.message.value.trim();
    if (!text || this.busy) return;
    if (!this.settings.endpoint || !this.settings.model) {
      this.view.notice('Set the Endpoint URL and the Model in Settings first.', 'error');
      return;
    }
    const editing = this.editing;
    this.message.value = '';
    await this.switching;
    const parent = resendParent ?? editing?.parent ?? this.tree.record.leaf;
    const key = await this.keyForRequest();
    if (key === undefined) {
      this.message.value = text;
      return;
    }
    // The page's policy lets it connect only to configured origins: widen it and send again after a reload.
    const need = await this.neededOrigins();
    if (this.connect.missing(need).length > 0) {
      try {
        if (!this.connect.reloadFor(need))
          throw new Error(
            `this page still cannot connect to ${this.connect.missing(need).join(', ')} after a reload: restart tycli app`,
          );
        await this.connect.widen(need);
        sessionStorage.setItem(RESEND, JSON.stringify({ conversation: this.tree.record.id, text, parent }));
        location.reload();
      } catch (e) {
        this.message.value = text;
        this.view.notice(e instanceof Error ? e.message : String(e), 'error');
      }
      return;
    }
    this.editing = undefined;
    this.editNote.hidden = true;
    this.view.clearNotices();
    await this.turn(key, async () => {
      if (this.tree.record.title === 'New conversation') await this.tree.setTitle(text.split('\n')[0]!.slice(0, 60));
      await this.tree.append(parent, [{ role: 'user', content: { type: 'message', text } }], this.host.registry);
      await this.refresh();
    });
  }

  /** Ask the model again for an assistant message: its parent becomes the leaf, the new answer a sibling branch. */
  async regenerate(t: Task): Promise<void> {
    if (this.busy || t.parent === undefined) return;
    await this.#again(() => this.tree.setLeaf(t.parent!));
  }

  /** Continue an interrupted answer from where it stopped. */
  async continueAnswer(t: Task): Promise<void> {
    if (this.busy) return;
    await this.#again(async () => {
      this.tree.record.interrupted = (this.tree.record.interrupted ?? []).filter((x) => x !== t.id);
      await this.tree.setLeaf(t.id);
    });
  }

  /** Run an interrupted call again (and the reply's other interrupted calls), then let the model go on. */
  async runAgain(call: Task): Promise<void> {
    if (this.busy) return;
    const plan = await planRerun(this.tree, call);
    if (!plan) return;
    await this.#again(async () => {
      await this.tree.setLeaf(plan.parent);
      await this.refresh();
      await runCalls(this.#deps(this.busy!.signal, ''), plan.calls, plan.keep);
    });
  }

  async #again(setup: () => Promise<void>): Promise<void> {
    const key = await this.keyForRequest();
    if (key === undefined) return;
    this.view.clearNotices();
    await this.turn(key, setup);
  }

  #deps(signal: AbortSignal, key: string) {
    return {
      tree: this.tree,
      registry: this.resolver,
      toolSettings: this.host.settings,
      runner: this.runner,
      settings: this.settings,
      apiKey: async () => key,
      signal,
      ...(this.journal ? { journal: this.journal } : {}),
      events: {
        onText: (d: string) => this.view.streamText(d),
        onTasks: () => void this.refresh(),
        onCallStart: (c: Task) => {
          this.view.callStarted(c.id);
          void this.markRuntime(c);
        },
        onCallEnd: (c: Task, o: Parameters<ConversationView['callEnded']>[1]) => this.view.callEnded(c, o),
        onNotice: (m: string, k: 'info' | 'error') => this.view.notice(m, k),
      },
    };
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

  /** One turn: `setup` (add the message, pick the leaf), then the model and tools; a failure offers what to do. */
  async turn(key: string, setup: () => Promise<void>, attempt = 0): Promise<void> {
    this.cancelRetry();
    const ac = new AbortController();
    this.busy = ac;
    this.send.disabled = true;
    this.stop.disabled = false;
    this.journal = new TurnJournal(this.db, this.tree.record.id, this.tree.record.leaf);
    let end: Awaited<ReturnType<typeof runTurn>> = { ok: true };
    try {
      await setup();
      end = await runTurn(this.#deps(ac.signal, key));
    } catch (e) {
      this.view.notice(`The turn failed: ${e instanceof Error ? e.message : String(e)}`, 'error');
    } finally {
      this.busy = undefined;
      this.journal = undefined;
      this.send.disabled = false;
      this.stop.disabled = true;
      this.view.clearStream();
      await this.refresh();
    }
    if (!end.ok) this.failed(end.error, key, attempt);
  }

  cancelRetry(): void {
    this.stopCountdown();
    this.stopCountdown = () => {};
  }

  /** Say what failed and offer the way on (ui/failure.ts). */
  failed(e: ModelError, key: string, attempt: number): void {
    const leaf = this.tree.record.leaf;
    const cut = (this.tree.record.interrupted ?? []).includes(leaf);
    this.stopCountdown = showFailure(this.view, e, attempt, {
      retry: () => void this.turn(key, async () => {}, attempt + 1),
      openSettings: () => this.shell.openPanel('Settings'),
      ...(cut ? { continueCut: () => void this.tree.task(leaf).then((t) => this.continueAnswer(t)) } : {}),
    });
  }
}

function readSession<T>(key: string): T | undefined {
  const v = sessionStorage.getItem(key);
  if (v === null) return undefined;
  sessionStorage.removeItem(key);
  try {
    return JSON.parse(v) as T;
  } catch {
    return undefined;
  }
}

async function boot(): Promise<void> {
  const db = await AppDb.open();
  const settings: AppSettings = { ...(await db.getSettings()), ...settingsFromUrl(location.search) };
  const app = new App(db, settings);
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
