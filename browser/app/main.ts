// The chat app's entry: opens the stores and the browser host, wires the conversation, composer and panels; browser
// app, trusted side.
import '../zod-jitless.js';
import './app.css';
import { createBrowserHost, type BrowserHost } from '../host.js';
import { PYODIDE_MANIFEST } from '../python/pyodide-manifest.js';
import { AppDb, settingsFromUrl, type AppSettings } from './app-db.js';
import { ConversationTree } from './tree.js';
import { ToolRunner } from './tool-runner.js';
import { runTurn } from './turn.js';
import { h, replaceChildren } from './dom.js';
import { ConversationView, type BranchInfo } from './ui/conversation.js';
import { mountInlineApprovals } from './ui/approvals.js';
import { settingsPanel } from './ui/settings-panel.js';
import { toolsPanel } from './ui/tools-panel.js';
import { auditPanel } from './ui/audit-panel.js';
import { exportConversation, importConversation } from './transfer.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { exampleTools } from './examples.js';
import { HOST_TOOL_NAMES, installHostTools } from './host-tools.js';
import { mountEmbedding } from './embed.js';
import { SecretGrants } from '../../core/capabilities/secrets.js';
import './protocol-embed.js';
import { PythonProgressBar } from './ui/python-progress.js';
import { mcpSettingsSection, restoreMcpServers } from './ui/mcp-settings.js';
import { restoreWebMcp, webmcpSettingSection } from './ui/webmcp-setting.js';
import { prepareAppStorage, requestAppStorage } from './embed-storage.js';
import { askToEmbed, storageNotice } from './ui/embed-ask.js';
import type { Task } from '../../protocol/task.js';

declare global {
  interface Window {
    /** Set when the app is interactive (tests and benchmarks wait on it). */
    tyAppReady?: boolean;
  }
}

class App {
  tree!: ConversationTree;
  busy: AbortController | undefined;
  editing: Task | undefined;
  readonly view: ConversationView;
  readonly message = h('textarea', {
    id: 'message',
    rows: 3,
    placeholder: 'Ask something; tools run in a sandbox in this page',
  });
  readonly send = h('button', { type: 'submit', class: 'primary' }, 'Send');
  readonly stop = h('button', { type: 'button', disabled: true }, 'Stop');
  readonly editNote = h('p', { class: 'edit-note', hidden: true });
  readonly python = new PythonProgressBar();
  readonly panels = h('div', { class: 'panels' });
  readonly convList = h('ul', { class: 'conv-list', 'aria-label': 'Conversations' });
  readonly importFile = h('input', {
    type: 'file',
    accept: '.json,application/json',
    class: 'visually-hidden',
    id: 'import-file',
  });
  readonly importInput = h('label', { class: 'button-like', for: 'import-file' }, 'Import', this.importFile);
  host!: BrowserHost;
  runner!: ToolRunner;
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
    });
  }

  async start(): Promise<void> {
    this.host = await createBrowserHost({
      dialog: false,
      secretValues: this.db.secretValues(),
      sandbox: { pyodide: PYODIDE_MANIFEST, onPythonProgress: (p) => this.python.update(p) },
    });
    this.disabledTools = new Set((await this.db.getValue<string[]>('toolsOff')) ?? []);
    await restoreMcpServers(this.db, this.host.mcp);
    await restoreWebMcp(this.db, this.host.webmcp);
    // Questions are answered inline, in the conversation (the host's built-in dialog is off).
    mountInlineApprovals(this.host.approvals, (rev, tool) => this.view.placeFor(rev, tool));
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
    const last = (await this.db.listConversations())[0];
    const current = await this.db.getValue<string>('current');
    this.tree =
      (current ? await ConversationTree.open(this.host.store, this.db, current) : undefined) ??
      (last ? await ConversationTree.open(this.host.store, this.db, last.id) : undefined) ??
      (await this.newTree());
    this.layout();
    await this.refresh();
    mountEmbedding({
      host: this.host,
      allowedOrigins: () => this.settings.embeddingOrigins,
      askToAllow: (origin) => askToEmbed(origin, this.settings, this.db),
    });
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
    const toggle = (label: string, make: () => HTMLElement) => {
      const b = h('button', { type: 'button', 'aria-expanded': 'false' }, label);
      b.addEventListener('click', () => {
        const open = b.getAttribute('aria-expanded') === 'true';
        for (const other of document.querySelectorAll('.toolbar [aria-expanded]'))
          other.setAttribute('aria-expanded', 'false');
        if (open) replaceChildren(this.panels);
        else {
          b.setAttribute('aria-expanded', 'true');
          replaceChildren(this.panels, make());
        }
      });
      return b;
    };
    const toolbar = h(
      'nav',
      { class: 'toolbar', 'aria-label': 'App' },
      h('button', { type: 'button', onclick: () => void this.openNew() }, 'New conversation'),
      toggle('Settings', () => {
        const panel = settingsPanel(this.db, this.settings, () => {});
        panel.append(mcpSettingsSection(this.db, this.host.mcp), webmcpSettingSection(this.db, this.host.webmcp));
        return panel;
      }),
      toggle('Tools', () =>
        toolsPanel({
          registry: this.host.registry,
          tools: this.host.tools,
          grants: new SecretGrants(this.host.store),
          disabled: this.disabledTools,
          saveDisabled: () => this.db.putValue('toolsOff', [...this.disabledTools]),
          defineInConversation: (m) => this.defineTool(m),
        }),
      ),
      toggle('Audit', () => auditPanel(this.host)),
      h('button', { type: 'button', onclick: () => void this.exportCurrent() }, 'Export'),
      this.importInput,
    );
    const app = document.getElementById('app')!;
    replaceChildren(
      app,
      h('header', { class: 'top' }, h('h1', {}, 'tysandbox chat'), toolbar),
      h(
        'div',
        { class: 'body' },
        h('aside', { class: 'sidebar' }, h('h2', {}, 'Conversations'), this.convList),
        h('main', {}, this.view.root, this.python.element, form),
        this.panels,
      ),
    );
    app.removeAttribute('aria-busy');
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
    const doc = await exportConversation(this.tree);
    const url = URL.createObjectURL(new Blob([JSON.stringify(doc, null, 2)], { type: 'application/json' }));
    const a = h('a', {
      href: url,
      download: `${this.tree.record.title.replace(/[^\w.-]+/g, '-').slice(0, 40) || 'conversation'}.json`,
    });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
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

  async openNew(): Promise<void> {
    if (this.busy) return;
    this.tree = await this.newTree();
    this.editing = undefined;
    this.view.clearNotices();
    await this.refresh();
  }

  async openConversation(id: string): Promise<void> {
    if (this.busy) return;
    const t = await ConversationTree.open(this.host.store, this.db, id);
    if (!t) return;
    this.tree = t;
    await this.db.putValue('current', id);
    this.view.clearNotices();
    await this.refresh();
  }

  async refresh(): Promise<void> {
    const path = await this.tree.path();
    const branches = new Map<string, BranchInfo>();
    for (const t of path) {
      if (t.parent === undefined) continue;
      const sib = this.tree.children(t.parent);
      if (sib.length > 1) branches.set(t.id, { index: sib.indexOf(t.id), count: sib.length });
    }
    this.view.render(path, branches);
    const convs = await this.db.listConversations();
    replaceChildren(
      this.convList,
      ...convs.map((c) =>
        h(
          'li',
          {},
          h(
            'button',
            {
              type: 'button',
              'aria-current': c.id === this.tree.record.id ? 'true' : undefined,
              onclick: () => void this.openConversation(c.id),
            },
            c.title,
          ),
        ),
      ),
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
    await this.refresh();
  }

  async submit(): Promise<void> {
    const text = this.message.value.trim();
    if (!text || this.busy) return;
    if (!this.settings.endpoint || !this.settings.model) {
      this.view.notice('Set the Endpoint URL and the Model in Settings first.', 'error');
      return;
    }
    const parent = this.editing?.parent ?? this.tree.record.leaf;
    this.editing = undefined;
    this.editNote.hidden = true;
    this.message.value = '';
    this.view.clearNotices();
    const ac = new AbortController();
    this.busy = ac;
    this.send.disabled = true;
    this.stop.disabled = false;
    try {
      if (this.tree.record.title === 'New conversation') await this.tree.setTitle(text.split('\n')[0]!.slice(0, 60));
      await this.tree.append(parent, [{ role: 'user', content: { type: 'message', text } }], this.host.registry);
      await this.refresh();
      await runTurn({
        tree: this.tree,
        registry: this.resolver,
        toolSettings: this.host.settings,
        runner: this.runner,
        settings: this.settings,
        apiKey: () => this.db.getKey(),
        signal: ac.signal,
        events: {
          onText: (d) => this.view.streamText(d),
          onTasks: () => {
            this.view.clearStream();
            void this.refresh();
          },
          onCalls: (ids) => {
            this.view.setRunning(ids);
            if (ids.size === 0) this.python.done();
          },
          onNotice: (m, k) => this.view.notice(m, k),
        },
      });
    } catch (e) {
      this.view.notice(`The turn failed: ${e instanceof Error ? e.message : String(e)}`, 'error');
    } finally {
      this.busy = undefined;
      this.send.disabled = false;
      this.stop.disabled = true;
      this.view.clearStream();
      await this.refresh();
    }
  }
}

async function boot(): Promise<void> {
  // inside another site the browser may partition or refuse storage: decided before any database opens
  const storage = await prepareAppStorage();
  const db = await AppDb.open();
  const settings: AppSettings = { ...(await db.getSettings()), ...settingsFromUrl(location.search) };
  const app = new App(db, settings);
  await app.start();
  const notice = storageNotice(storage, requestAppStorage);
  if (notice) document.getElementById('app')?.prepend(notice);
  document.documentElement.dataset.storage = storage.mode;
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
