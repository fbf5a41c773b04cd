// The registration protocol over postMessage: serves tysandbox/1 to the one parent window embedding this page, if its
// origin is allowed; browser host, trusted side.
import {
  RegistrationServer,
  type ProtocolSession,
  type RegistrationServerOptions,
} from '../../core/registration/server.js';
import type { RpcMessage } from '../../core/registration/rpc.js';
import { TyError } from '../../core/errors.js';
import type { ToolIdentity } from '../../core/exec/invoke.js';
import { PARENT_CALL_METHOD, ParentCallResultSchema } from '../../protocol/registration.js';
import type { BrowserHost } from '../host.js';

/** The principal of an embedding page: `origin:<its origin>`. */
export const windowPrincipal = (origin: string): string => `origin:${origin}`;

/** The part of a window this module uses (a real Window in the app; injectable for tests). */
export interface WindowLike {
  postMessage(message: unknown, targetOrigin: string): void;
}
export interface ListenerLike {
  addEventListener(type: 'message', fn: (ev: MessageEvent) => void): void;
  removeEventListener(type: 'message', fn: (ev: MessageEvent) => void): void;
}

export interface WindowServerOptions {
  /** The host whose registry, gate and invoker the protocol drives. */
  host: BrowserHost;
  /**
   * The origins allowed to talk to this page (the app's "Allowed embedding origins" setting, empty by default),
   * read on every message so a change applies at once. Exact origins (`https://host[:port]`); never `*`.
   */
  allowedOrigins: () => readonly string[];
  /** The embedding window (default `window.parent`); with none (not framed) nothing is ever answered. */
  parent?: WindowLike | null;
  /** Where messages arrive (default `window`). */
  listenOn?: ListenerLike;
  /** Protocol limits (rate, message size). */
  limits?: RegistrationServerOptions['limits'];
  /**
   * Ask the person in this page whether the embedding page of `origin` (not in `allowedOrigins()`) may use it: called
   * on that page's first `initialize`, at most once per origin while this page lives (a "no" is kept, and that page
   * still gets no answer at all). Resolves true once the origin was added to what `allowedOrigins()` returns; the
   * page's next `initialize` (connectWindow repeats it) is then answered.
   */
  askToAllow?: (origin: string) => Promise<boolean>;
  /** How long a parent-executed tool call may wait for the page's answer, ms (default: the call's own timeout). */
}

export interface WindowServer {
  server: RegistrationServer;
  /** The session of the current embedding origin, once a message from it arrived. */
  readonly session: ProtocolSession | undefined;
  /**
   * Run a revision with `execution.transport: "parent"`: a `tool/call` request to the embedding page whose
   * origin is the revision's `serviceId` (never any other), answered `{result}`.
   * @throws TyError E_SANDBOX_UNAVAILABLE (that page is not connected), E_TOOL_FAILED (it answered an error or a
   *   malformed reply), E_ABORTED
   */
  callParent(identity: ToolIdentity, args: unknown, signal: AbortSignal): Promise<unknown>;
  stop(): void;
}

function exactOrigin(o: string): boolean {
  return typeof o === 'string' && o !== '*' && o !== 'null' && /^https?:\/\/[^/?#\s]+$/.test(o);
}

/**
 * Serve tysandbox/1 to the embedding page. A message is read only when (1) it comes from the parent window
 * itself (`event.source === parent`: another frame, a popup or a worker of an allowed origin is ignored), and
 * (2) `event.origin` is exactly one of `allowedOrigins()`. Anything else gets no answer at all, so a page
 * that is not allowed learns nothing, not even that the protocol exists. Replies are posted to the parent
 * only, with `targetOrigin` set to that exact origin (never `*`), so if the parent navigated meanwhile the
 * browser drops them. The principal is `origin:<origin>`; one session per origin (a new origin ends the old
 * session). Registrations of `transport: "parent"` tools must name the page's own origin as `serviceId`.
 */
export function serveProtocolWindow(opts: WindowServerOptions): WindowServer {
  const g = globalThis as unknown as { parent?: unknown; addEventListener?: unknown };
  const self = globalThis as unknown as WindowLike;
  const parent = opts.parent === undefined ? ((g.parent as WindowLike | undefined) ?? null) : opts.parent;
  const listenOn = opts.listenOn ?? (globalThis as unknown as ListenerLike);
  const host = opts.host;
  const server = new RegistrationServer({
    registry: host.registry,
    gate: host.gate,
    run: (ref, args, o) => host.invoker.invoke(ref, args, o),
    checkManifest: (m, principal) => {
      const ex = m.execution;
      if (
        ex.kind === 'external-service' &&
        ex.transport === 'parent' &&
        principal.startsWith('origin:') &&
        ex.serviceId !== principal.slice('origin:'.length)
      ) {
        throw new TyError(
          'E_INVALID_MANIFEST',
          `a tool the embedding page executes must name that page's origin as execution.serviceId ("${principal.slice(7)}")`,
          { path: 'execution.serviceId' },
        );
      }
    },
    ...(opts.limits ? { limits: opts.limits } : {}),
  });
  let current: { origin: string; session: ProtocolSession } | undefined;
  /** Origins the person was asked about while this page lives: the question in flight, or its answer. */
  const asked = new Map<string, Promise<boolean>>();
  const isInitialize = (d: unknown): boolean =>
    typeof d === 'object' && d !== null && (d as { method?: unknown }).method === 'initialize';
  const offLog = host.onToolLog((revision, level, text) => server.toolLog(revision, level, text));
  // another page of this origin changed the shared store: tool/listChanged for the subscribed embedding page
  const offChange = host.onRegistryChange(() => server.registryChanged());

  const sessionFor = (origin: string): ProtocolSession => {
    if (current?.origin === origin) return current.session;
    current?.session.close();
    const send = (m: RpcMessage): void => parent!.postMessage(m, origin);
    const session = server.connect({ principal: () => windowPrincipal(origin), send });
    current = { origin, session };
    return session;
  };

  const onMessage = (ev: MessageEvent): void => {
    if (!parent || parent === self) return; // not embedded
    if (ev.source !== (parent as unknown)) return;
    const origin = ev.origin;
    if (!exactOrigin(origin)) return;
    let allowed: readonly string[];
    try {
      allowed = opts.allowedOrigins();
    } catch {
      return;
    }
    if (!allowed.includes(origin)) {
      // the first handshake of a page the person has not decided on: ask them here (once), answer nothing now
      if (opts.askToAllow && isInitialize(ev.data) && !asked.has(origin))
        asked.set(
          origin,
          opts.askToAllow(origin).catch(() => false),
        );
      return;
    }
    const s = sessionFor(origin);
    void s.receive(ev.data).catch(() => undefined);
  };
  listenOn.addEventListener('message', onMessage);

  return {
    server,
    get session() {
      return current?.session;
    },
    async callParent(identity, args, signal) {
      const ex = identity.manifest.execution;
      const want = ex.kind === 'external-service' ? ex.serviceId : '';
      const c = current;
      if (!c || c.origin !== want || !opts.allowedOrigins().includes(want) || c.session.principal === undefined) {
        throw new TyError(
          'E_SANDBOX_UNAVAILABLE',
          `${identity.name} is executed by the embedding page ${want.slice(0, 200)}, which is not connected`,
        );
      }
      const reply = await c.session.request(
        PARENT_CALL_METHOD,
        { name: identity.name, revision: identity.revision, arguments: args },
        signal,
      );
      const parsed = ParentCallResultSchema.safeParse(reply);
      if (!parsed.success)
        throw new TyError(
          'E_TOOL_FAILED',
          `the embedding page answered ${PARENT_CALL_METHOD} without a {result} object`,
        );
      return parsed.data.result;
    },
    stop() {
      listenOn.removeEventListener('message', onMessage);
      offLog();
      offChange();
      server.close();
      current = undefined;
    },
  };
}
