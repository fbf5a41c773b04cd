// The bridge's notification relay: a server's list changes, resource updates and log messages to the client session
// it belongs to, and a changed set of definitions to every client session; core, trusted side.
import type { Server } from '@modelcontextprotocol/server';
import type { BridgeContext, ListenNotifier } from './context.js';

/** Relays notifications toward clients: on each client session's SDK Server, or its `subscriptions/listen` streams. */
export class NotificationRelay {
  /** The `subscriptions/listen` publishers of stateless (2026-07-28 over HTTP) client sessions, by session id. */
  private readonly notifiers = new Map<string, ListenNotifier>();
  private unwatch: (() => void) | undefined;

  constructor(private readonly ctx: BridgeContext) {}

  /**
   * Where a stateless (2026-07-28 over HTTP) client session's change notifications go: the serving entry's
   * `subscriptions/listen` streams (the SDK handler's `notify`), as its per-request Servers have no channel of their
   * own.
   */
  setListenNotifier(sessionId: string, notify: ListenNotifier): void {
    this.notifiers.set(sessionId, notify);
  }

  /** Start watching the definitions (once): a server added, removed or defined again changes every session's lists. */
  watchDefinitions(): void {
    const single = this.ctx.naming.single;
    this.unwatch ??= this.ctx.opts.source.watch?.(
      () => void this.listsChanged(),
      single !== undefined ? { only: single } : {},
    );
  }

  /**
   * One notification of server `name` (method, params as the server sent them) to client session `sessionId`: on its
   * listen streams when it has them (list changes and resource updates only), else on `server`, its SDK Server. A
   * resource's URI is the bridged one; a log message keeps the server's logger name under the server's own name.
   * Progress travels with its call and cancellations need no relay: neither is sent here.
   */
  async forward(
    server: Server | undefined,
    sessionId: string,
    name: string,
    method: string,
    params: unknown,
  ): Promise<void> {
    const p = (params ?? {}) as Record<string, unknown>;
    const naming = this.ctx.naming;
    const notify = this.notifiers.get(sessionId);
    if (notify !== undefined) {
      // list changes and resource updates only: a stateless client has no stream for anything else
      if (method === 'notifications/tools/list_changed') notify.toolsChanged();
      else if (method === 'notifications/prompts/list_changed') notify.promptsChanged();
      else if (method === 'notifications/resources/list_changed') notify.resourcesChanged();
      else if (method === 'notifications/resources/updated' && typeof p.uri === 'string')
        notify.resourceUpdated(naming.uri(name, p.uri));
      return;
    }
    if (!server) return;
    try {
      switch (method) {
        case 'notifications/tools/list_changed':
          return await server.sendToolListChanged();
        case 'notifications/prompts/list_changed':
          return await server.sendPromptListChanged();
        case 'notifications/resources/list_changed':
          return await server.sendResourceListChanged();
        case 'notifications/resources/updated':
          if (typeof p.uri === 'string') await server.sendResourceUpdated({ uri: naming.uri(name, p.uri) });
          return;
        case 'notifications/message': {
          // the server's own logger name is kept (under the server's name when several are offered)
          const own = typeof p.logger === 'string' ? p.logger.slice(0, 200) : undefined;
          const logger = naming.single !== undefined ? own : own !== undefined ? `${name}/${own}` : name;
          await server.notification({
            method: 'notifications/message',
            params: {
              level: typeof p.level === 'string' ? p.level : 'info',
              ...(logger !== undefined ? { logger } : {}),
              data: p.data,
            },
          });
          return;
        }
        default:
          return; // progress travels with its call; cancelled needs no relay
      }
    } catch {
      /* the client went away */
    }
  }

  /** Tell every client session that the tool, prompt and resource lists changed (MCP listChanged). */
  async listsChanged(): Promise<void> {
    for (const n of this.notifiers.values()) {
      n.toolsChanged();
      n.promptsChanged();
      n.resourcesChanged();
    }
    for (const [id, s] of [...this.ctx.servers.entries()]) {
      if (this.notifiers.has(id)) continue;
      await s.sendToolListChanged().catch(() => undefined);
      await s.sendPromptListChanged().catch(() => undefined);
      await s.sendResourceListChanged().catch(() => undefined);
    }
  }

  /** A client session ended: nothing more goes to its listen streams. */
  endSession(sessionId: string): void {
    this.notifiers.delete(sessionId);
  }

  /** Stop watching the definitions. */
  close(): void {
    this.unwatch?.();
    this.unwatch = undefined;
  }
}
