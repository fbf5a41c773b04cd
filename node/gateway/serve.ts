// One serving instance of the team gateway assembled: flags, instruments (metrics, traces, logs), identities,
// admission, readiness and the HTTP(S) front around a command's route; Node host, trusted side.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TyError } from '../../core/errors.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import type { CallReport } from '../../core/exec/trace.js';
import type { NodeHost } from '../host/host.js';
import type { LoadedSettings } from '../settings/load.js';
import { Admission } from './admission.js';
import { Authenticator } from './auth.js';
import { readiness, storeCheck } from './health.js';
import {
  checkExposure,
  parseListen,
  startGateway,
  type Gateway,
  type ListenAddress,
  type RequestContext,
} from './listen.js';
import { jsonLog, type JsonLog } from './log.js';
import { GatewayMetrics } from './metrics.js';
import { OidcVerifier } from './oidc.js';
import { TokenStore } from './tokens.js';
import { Tracing, tracingFromEnv } from './tracing.js';

/** The flags every HTTP server command takes (`serve --http`, `mcp serve --http`, `mcp proxy --http`). */
export interface GatewayFlags {
  listen: ListenAddress;
  tls?: { cert: string; key: string };
  behindProxy: boolean;
  /** Given: one line per request and event on stderr in this format; absent: events only, as text. */
  logFormat?: 'json' | 'text';
}

/** The option table of those flags, for a command's parseArgs options. */
export const GATEWAY_OPTIONS = {
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'behind-proxy': { type: 'boolean' },
  'log-format': { type: 'string' },
} as const;

/** Usage lines of those flags. */
export const GATEWAY_USAGE = `  --http [HOST:]PORT      listen on HOST (default 127.0.0.1; 0: any free port); beyond loopback only with
                          --tls-cert/--tls-key or --behind-proxy
  --tls-cert FILE         serve HTTPS with this PEM certificate chain (and --tls-key FILE, its PEM key)
  --behind-proxy          a TLS-terminating proxy is in front: plain HTTP beyond loopback, X-Forwarded-* trusted
  --log-format json|text  one line per request and event on stderr (json for log collectors); without it only
                          events (listening, stopped), as text`;

/**
 * Read the gateway flags of a command (`--http` given). @throws TyError E_USAGE (a bad address, TLS half given, a
 * non-loopback address without TLS or --behind-proxy, an unknown log format).
 */
export function gatewayFlags(v: Record<string, unknown>): GatewayFlags {
  const listen = parseListen(String(v.http));
  const cert = v['tls-cert'];
  const key = v['tls-key'];
  if ((cert === undefined) !== (key === undefined))
    throw new TyError('E_USAGE', '--tls-cert and --tls-key go together (the certificate chain and its key, PEM)');
  const format = v['log-format'];
  if (format !== undefined && format !== 'json' && format !== 'text')
    throw new TyError('E_USAGE', '--log-format is json or text');
  const flags: GatewayFlags = { listen, behindProxy: v['behind-proxy'] === true };
  if (format !== undefined) flags.logFormat = format;
  if (typeof cert === 'string' && typeof key === 'string') flags.tls = { cert, key };
  checkExposure(listen.host, flags.tls !== undefined, flags.behindProxy);
  return flags;
}

/** Metrics and traces, made before the host so that its invoker and gate report to them. */
export interface Instruments {
  metrics: GatewayMetrics;
  tracing?: Tracing;
  /** Late-bound sources of the gauges (the host and the front exist only later). */
  sources: { host?: NodeHost; admission?: Admission; sessions?: () => number };
  /** The Invoker's observer: calls by tool, outcome and engine. */
  observe(r: CallReport): void;
}

/** Make the instruments (traces only when an OTLP endpoint is configured: tracing.ts tracingFromEnv). */
export async function gatewayInstruments(env: NodeJS.ProcessEnv): Promise<Instruments> {
  const sources: Instruments['sources'] = {};
  const metrics = await GatewayMetrics.create({
    sandboxesAlive: () => sources.host?.gauges.sandboxesAlive() ?? 0,
    queueDepth: () => sources.host?.gauges.queueDepth() ?? 0,
    asksPending: () => sources.host?.gauges.asksPending() ?? 0,
    connections: () => sources.admission?.connections ?? 0,
    sessions: () => sources.sessions?.() ?? 0,
  });
  const config = tracingFromEnv(env);
  const tracing = config ? await Tracing.start(config) : undefined;
  const defaultEngine = env.TYCLI_RUNTIME === 'deno' ? 'deno' : 'node';
  return {
    metrics,
    ...(tracing ? { tracing } : {}),
    sources,
    observe(r) {
      const e = r.execution;
      const engine =
        e === undefined
          ? 'none'
          : e.kind === 'trusted-native'
            ? 'native'
            : e.kind === 'external-service'
              ? 'external'
              : e.runtime === 'python'
                ? 'python'
                : (e.engine ?? defaultEngine);
      metrics.observeCall({ tool: r.tool.slice(0, 128), engine, outcome: r.outcome, seconds: r.seconds });
    },
  };
}

export interface ServeOptions {
  flags: GatewayFlags;
  host: NodeHost;
  settings: LoadedSettings;
  instruments: Instruments;
  /** The static token's file name prefix: `serve-http`, `mcp-http`, `mcp-proxy-NAME`. */
  tokenPrefix: string;
  /** The route's paths (the first is the RFC 9728 resource). */
  paths: string[];
  route: (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, admission: Admission) => Promise<void>;
  sessions: () => number;
  /** Where logs go (stderr). */
  stderr: NodeJS.WritableStream;
  writeTokenFile: (fileName: string, token: string) => Promise<string>;
}

export interface Serving {
  gateway: Gateway;
  /** The base URL and the route's URL. */
  url: string;
  token: string;
  tokenFile: string;
  log: JsonLog;
  close(): Promise<void>;
}

/**
 * Start one instance's front: the server's own token (a file per listening address,
 * `<run>/<prefix>-<host>-<port>.token`, never shared between servers), per-client tokens from the store, OIDC from
 * the user settings' `gateway.oidc`, admission with refusals counted and audited, readiness (the store, the sandbox
 * posture), metrics, traces and logs. Token records changed on any instance (LISTEN/NOTIFY) drop cached verdicts at
 * once.
 */
export async function startServing(o: ServeOptions): Promise<Serving> {
  const { host, instruments } = o;
  // the process's own stderr is written asynchronously through its descriptor: a slow reader never stalls serving
  const log = jsonLog(o.stderr === process.stderr ? 2 : o.stderr, o.flags.logFormat ?? 'text');
  const { newBearerToken } = await import('../http/guard.js');
  const token = newBearerToken();
  const oidcConfig = o.settings.gateway?.oidc;
  const auth = new Authenticator({
    staticToken: token,
    tokens: new TokenStore(host.store),
    ...(oidcConfig ? { oidc: new OidcVerifier(oidcConfig) } : {}),
  });
  const session = await host.opened.session();
  const stopChanges = session?.onChange((e) => e.ns === 'tokens' && auth.invalidate());
  const stopResync = session?.onResync(() => auth.invalidate());
  const audit = new StoreAuditLog(host.store);
  const admission = new Admission(
    {},
    {
      refused: (r) => instruments.metrics.refused(r),
      audit: (rec) => audit.append(rec),
    },
  );
  instruments.sources.host = host;
  instruments.sources.admission = admission;
  instruments.sources.sessions = o.sessions;
  const posture = o.settings.sandbox ?? 'auto';
  const gateway = await startGateway({
    listen: o.flags.listen,
    ...(o.flags.tls ? { tls: o.flags.tls } : {}),
    behindProxy: o.flags.behindProxy,
    auth,
    admission,
    metrics: instruments.metrics,
    ...(instruments.tracing ? { tracing: instruments.tracing } : {}),
    log,
    logRequests: o.flags.logFormat !== undefined,
    ready: () =>
      readiness({
        store: storeCheck(host.opened.backend, session),
        sandbox: async () => {
          if (posture === 'off') return;
          const { probeSandbox } = await import('../os-sandbox/probe.js');
          const p = await probeSandbox();
          if (!p.available && posture === 'required')
            throw Object.assign(new Error('no OS sandbox'), { code: 'no-os-sandbox' });
        },
      }),
    paths: o.paths,
    route: (req, res, ctx) => o.route(req, res, ctx, admission),
  });
  const hostPart = o.flags.listen.host.replace(/[^0-9A-Za-z.]/g, '_');
  const tokenFile = await o.writeTokenFile(`${o.tokenPrefix}-${hostPart}-${gateway.port}.token`, token);
  log.log('info', 'listening', {
    url: `${gateway.base}${o.paths[0] ?? ''}`,
    store: host.opened.kind,
    oidc: oidcConfig !== undefined,
    tracing: instruments.tracing !== undefined,
    tls: o.flags.tls !== undefined,
    behindProxy: o.flags.behindProxy,
  });
  let closed = false;
  return {
    gateway,
    url: `${gateway.base}${o.paths[0] ?? ''}`,
    token,
    tokenFile,
    log,
    async close() {
      if (closed) return;
      closed = true;
      stopChanges?.();
      stopResync?.();
      await gateway.close();
      await instruments.tracing?.close();
      log.log('info', 'stopped', {});
      await log.flush();
    },
  };
}
