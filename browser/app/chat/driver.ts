// Sending and answering in the app: the message and its files, the conversation's connection and key, the page's
// connect origins, one turn and what a failure offers, the title after the first exchange; browser app, trusted side.
import type { Attachment, Task } from '../../../protocol/task.js';
import type { AppDb, AppSettings, LinkOverride } from '../app-db.js';
import type { BrowserHost } from '../../host.js';
import { connectSource, neededOrigins, type ConnectOrigins } from '../connect.js';
import { isImage } from '../attachments/parts.js';
import type { AttachmentTray } from '../attachments/tray.js';
import { askTitle } from '../conversations/titles.js';
import type { ConversationManager } from '../conversations/manager.js';
import type { ModelError } from '../models/types.js';
import type { Choice, Connections } from '../providers/connections.js';
import { keyForEndpoint, type SentCredentials } from '../providers/key-question.js';
import type { ConversationView } from '../ui/conversation.js';
import { showFailure } from '../ui/failure.js';
import type { CallOutcome } from './convert.js';
import { TurnJournal } from './journal.js';
import { planRerun } from './rerun.js';
import { requestOptions } from './system.js';
import type { ToolRunner } from './tool-runner.js';
import type { ConversationTree } from './tree.js';
import { complete, runCalls, runTurn, type TurnDeps } from './turn.js';

/** sessionStorage: a message to send again after the page reloaded to widen its connect origins. */
export const RESEND = 'tysandbox-resend';

/** What a message waiting for a reload holds. */
export interface Resend {
  conversation: string;
  text: string;
  parent?: string;
  attachments?: Attachment[];
}

/** What the driver needs from the app. */
export interface DriverHost {
  db: AppDb;
  host: BrowserHost;
  settings: AppSettings;
  connections: Connections;
  /** A link's endpoint for this visit (URL parameters). */
  link: LinkOverride;
  connect: ConnectOrigins;
  runner: ToolRunner;
  resolver: TurnDeps['registry'];
  view: ConversationView;
  tray: AttachmentTray;
  manager: ConversationManager;
  message: HTMLTextAreaElement;
  send: HTMLButtonElement;
  stop: HTMLButtonElement;
  editNote: HTMLElement;
  tree(): ConversationTree;
  /** A conversation switch in progress (a Send waits for it). */
  switching(): Promise<void>;
  refresh(): Promise<void>;
  openSettings(): void;
  markRuntime(call: Task): void;
}

/** Runs the turns of the conversation shown: one at a time (`busy`). */
export class TurnDriver {
  busy: AbortController | undefined;
  editing: Task | undefined;
  journal: TurnJournal | undefined;
  /** Stops a running 429 countdown. */
  stopCountdown: () => void = () => {};

  constructor(private readonly a: DriverHost) {}

  /** The connection and model the conversation shown sends to (the link's endpoint for this visit, if any). */
  choice(): Choice | undefined {
    return this.a.connections.choiceFor(this.a.tree().record, this.a.link);
  }

  /** Put text and files back into the composer (a send that did not happen). */
  async #giveBack(text: string, files: Attachment[]): Promise<void> {
    this.a.message.value = text;
    await this.a.tray.restore(files);
  }

  /** Send the composer's message (and files). `resend`: the message kept over a reload that widened the origins. */
  async submit(resend?: Resend): Promise<void> {
    const a = this.a;
    if (resend) {
      a.message.value = resend.text;
      await a.tray.restore(resend.attachments ?? []);
    }
    const text = a.message.value.trim();
    if ((!text && a.tray.count === 0) || this.busy) return;
    const choice = this.choice();
    if (!choice?.connection.endpoint || !choice.model) {
      a.view.notice(
        choice
          ? 'Pick a model in the Model menu above the conversation, or set one in Settings → Connections.'
          : 'Add a connection first: Settings → Connections (Endpoint URL, API key, Model).',
        'error',
        [{ label: 'Open settings', run: () => a.openSettings() }],
      );
      return;
    }
    const opts = requestOptions(choice.connection.api, a.tree().record);
    if (!opts.ok) return void a.view.notice(opts.message, 'error');
    const editing = this.editing;
    const files = a.tray.take();
    if (files.some((f) => isImage(f) && !f.toTools) && !choice.connection.images) {
      await this.#giveBack(text, files);
      a.view.notice(
        `${choice.connection.name} is set not to send images to its models: remove the image, give it to tools, or ` +
          `turn on "Send images to this connection's models" in Settings → Connections.`,
        'error',
      );
      return;
    }
    a.message.value = '';
    await a.switching();
    const tree = a.tree();
    const parent = resend?.parent ?? editing?.parent ?? tree.record.leaf;
    const creds = await keyForEndpoint(a.db, choice.connection, a.view.placeFor(undefined));
    if (creds === undefined) return void (await this.#giveBack(text, files));
    // The page's policy lets it connect only to configured origins: widen it and send again after a reload.
    const need = [
      ...a.connections.origins(),
      ...[connectSource(choice.connection.endpoint) ?? []].flat(),
      ...neededOrigins('', await a.runner.offeredTools()),
    ];
    if (a.connect.missing(need).length > 0) {
      try {
        if (!a.connect.reloadFor(need))
          throw new Error(
            `this page still cannot connect to ${a.connect.missing(need).join(', ')} after a reload: restart tycli app`,
          );
        await a.connect.widen(need);
        const r: Resend = { conversation: tree.record.id, text, ...(parent ? { parent } : {}), attachments: files };
        sessionStorage.setItem(RESEND, JSON.stringify(r));
        location.reload();
      } catch (e) {
        await this.#giveBack(text, files);
        a.view.notice(e instanceof Error ? e.message : String(e), 'error');
      }
      return;
    }
    this.editing = undefined;
    a.editNote.hidden = true;
    a.view.clearNotices();
    await this.turn(creds, choice, async () => {
      await a.manager.firstTitle(tree, text, files[0]?.name);
      if (files.length)
        await a.db.claimFiles(
          tree.record.id,
          files.map((f) => f.sha256),
        );
      const content = { type: 'message' as const, text, ...(files.length ? { attachments: files } : {}) };
      await tree.append(parent, [{ role: 'user', content }], a.host.registry);
      await a.refresh();
    });
  }

  /** Ask the model again for an assistant message: its parent becomes the leaf, the new answer a sibling branch. */
  async regenerate(t: Task): Promise<void> {
    if (this.busy || t.parent === undefined) return;
    await this.#again(() => this.a.tree().setLeaf(t.parent!));
  }

  /** Continue an interrupted answer from where it stopped. */
  async continueAnswer(t: Task): Promise<void> {
    if (this.busy) return;
    await this.#again(async () => {
      const tree = this.a.tree();
      tree.record.interrupted = (tree.record.interrupted ?? []).filter((x) => x !== t.id);
      await tree.setLeaf(t.id);
    });
  }

  /** Run an interrupted call again (and the reply's other interrupted calls), then let the model go on. */
  async runAgain(call: Task): Promise<void> {
    if (this.busy) return;
    const tree = this.a.tree();
    const plan = await planRerun(tree, call);
    if (!plan) return;
    await this.#again(async (deps) => {
      await tree.setLeaf(plan.parent);
      await this.a.refresh();
      await runCalls(deps, plan.calls, plan.keep);
    });
  }

  async #again(setup: (deps: TurnDeps) => Promise<void>): Promise<void> {
    const choice = this.choice();
    if (!choice) return void this.a.openSettings();
    const creds = await keyForEndpoint(this.a.db, choice.connection, this.a.view.placeFor(undefined));
    if (creds === undefined) return;
    this.a.view.clearNotices();
    await this.turn(creds, choice, setup);
  }

  #deps(signal: AbortSignal, creds: SentCredentials, choice: Choice): TurnDeps {
    const a = this.a;
    const tree = a.tree();
    const c = choice.connection;
    const rec = tree.record;
    const opts = requestOptions(c.api, rec);
    return {
      tree,
      registry: a.resolver,
      toolSettings: a.host.settings,
      runner: a.runner,
      settings: {
        api: c.api,
        endpoint: c.endpoint,
        model: choice.model,
        stream: a.settings.stream,
        images: c.images,
        headers: creds.headers,
        ...(rec.systemPrompt !== undefined ? { systemPrompt: rec.systemPrompt } : {}),
        ...(opts.ok && opts.temperature !== undefined ? { temperature: opts.temperature } : {}),
        ...(opts.ok && opts.maxTokens !== undefined ? { maxTokens: opts.maxTokens } : {}),
      },
      apiKey: async () => creds.key,
      signal,
      loadFile: (sha) => a.db.getFile(sha),
      ...(this.journal ? { journal: this.journal } : {}),
      events: {
        onText: (d: string) => a.view.streamText(d),
        onTasks: () => void a.refresh(),
        onCallStart: (call: Task) => {
          a.view.callStarted(call.id);
          a.markRuntime(call);
        },
        onCallEnd: (call: Task, o: CallOutcome) => a.view.callEnded(call, o),
        onNotice: (m: string, k: 'info' | 'error') => a.view.notice(m, k),
        onReply: (t, usage) =>
          void tree.noteReply(t.id, {
            connection: c.name,
            model: choice.model,
            ...(usage?.input !== undefined ? { input: usage.input } : {}),
            ...(usage?.output !== undefined ? { output: usage.output } : {}),
          }),
      },
    };
  }

  /**
   * One turn: `setup` (add the message, pick the leaf), then the model and tools; a failure offers what to do; after
   * a conversation's first answer its title may come from the model (Settings: "Name conversations with the model").
   */
  async turn(
    creds: SentCredentials,
    choice: Choice,
    setup: (deps: TurnDeps) => Promise<void>,
    attempt = 0,
  ): Promise<void> {
    const a = this.a;
    this.cancelRetry();
    const ac = new AbortController();
    this.busy = ac;
    a.send.disabled = true;
    a.stop.disabled = false;
    const tree = a.tree();
    this.journal = new TurnJournal(a.db, tree.record.id, tree.record.leaf);
    let end: Awaited<ReturnType<typeof runTurn>> = { ok: true };
    try {
      const deps = this.#deps(ac.signal, creds, choice);
      await setup(deps);
      end = await runTurn(deps);
    } catch (e) {
      a.view.notice(`The turn failed: ${e instanceof Error ? e.message : String(e)}`, 'error');
    } finally {
      this.busy = undefined;
      this.journal = undefined;
      a.send.disabled = false;
      a.stop.disabled = true;
      a.view.clearStream();
      await a.refresh();
    }
    if (!end.ok) return this.failed(end.error, creds, choice, attempt);
    if (tree.record.titleSource === 'words' && a.settings.modelTitles) await this.#modelTitle(tree, creds, choice);
  }

  /** The model's title for a conversation after its first exchange (a first question and its first answer). */
  async #modelTitle(tree: ConversationTree, creds: SentCredentials, choice: Choice): Promise<void> {
    const path = await tree.path();
    const question = path.find((t) => t.role === 'user' && t.content.type === 'message');
    const answer = path.find((t) => t.role === 'assistant' && t.content.type === 'message' && t.content.text.trim());
    if (question?.content.type !== 'message' || answer?.content.type !== 'message') return;
    const c = choice.connection;
    const got = await askTitle(
      (req) => complete(c.api, req),
      {
        endpoint: c.endpoint,
        model: choice.model,
        apiKey: creds.key,
        headers: creds.headers,
        signal: AbortSignal.timeout(30_000),
      },
      question.content.text,
      answer.content.text,
    );
    if (!got) return;
    const u = got.reply.usage;
    if (u) await tree.noteReply('title', { connection: c.name, model: choice.model, ...u });
    if (tree.record.titleSource !== 'words') return;
    await tree.setTitle(got.title, 'model');
    await this.a.refresh();
  }

  cancelRetry(): void {
    this.stopCountdown();
    this.stopCountdown = () => {};
  }

  /** Say what failed and offer the way on (ui/failure.ts). */
  failed(e: ModelError, creds: SentCredentials, choice: Choice, attempt: number): void {
    const tree = this.a.tree();
    const leaf = tree.record.leaf;
    const cut = (tree.record.interrupted ?? []).includes(leaf);
    this.stopCountdown = showFailure(this.a.view, e, attempt, {
      retry: () => void this.turn(creds, choice, async () => {}, attempt + 1),
      openSettings: () => this.a.openSettings(),
      ...(cut ? { continueCut: () => void tree.task(leaf).then((t) => this.continueAnswer(t)) } : {}),
    });
  }
}
