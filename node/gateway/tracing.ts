// OpenTelemetry traces of calls: a tracer provider on @opentelemetry/api with an AsyncLocalStorage context and a
// batching OTLP/HTTP JSON exporter, configured by the standard OTEL_* variables; Node host, trusted side.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type {
  Attributes,
  Context,
  ContextManager,
  Span,
  SpanContext,
  SpanOptions,
  SpanStatus,
  Tracer,
  TracerProvider,
} from '@opentelemetry/api';
import { TyError } from '../../core/errors.js';
import type { CallTracer, TraceAttributes } from '../../core/exec/trace.js';

/** Where traces go and what they say about this process (OpenTelemetry's environment variables). */
export interface TracingConfig {
  /** The OTLP/HTTP traces URL (`.../v1/traces`). */
  endpoint: string;
  /** Extra request headers (an API key of the collector). */
  headers: Record<string, string>;
  /** `service.name` of the resource (default `tycli`). */
  serviceName: string;
  /** More resource attributes (OTEL_RESOURCE_ATTRIBUTES). */
  resource: Record<string, string>;
}

/** `k1=v1,k2=v2` with URL-encoded values (the W3C Baggage-like list OTEL_EXPORTER_OTLP_HEADERS uses). */
function keyValues(text: string | undefined, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (text ?? '').split(',')) {
    if (!part.trim()) continue;
    const eq = part.indexOf('=');
    if (eq < 1) throw new TyError('E_USAGE', `${what} takes key=value pairs separated by commas`);
    out[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(part.slice(eq + 1).trim());
  }
  return out;
}

/**
 * The tracing configuration from the environment (OpenTelemetry specification "Environment Variable Specification"
 * and "OTLP Exporter Configuration"): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or OTEL_EXPORTER_OTLP_ENDPOINT
 * (+ `/v1/traces`), OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES; OTEL_SDK_DISABLED
 * or OTEL_TRACES_EXPORTER=none turn it off. Only the `http/json` protocol is spoken.
 * @returns undefined when no endpoint is configured (no tracing, nothing loaded).
 * @throws TyError E_USAGE for another protocol or a malformed value.
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv): TracingConfig | undefined {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return undefined;
  const direct = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!direct && !base) return undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/json';
  if (protocol !== 'http/json')
    throw new TyError(
      'E_USAGE',
      `OTEL_EXPORTER_OTLP_PROTOCOL ${protocol.slice(0, 20)} is not supported; tycli exports traces as http/json`,
    );
  const endpoint = direct ?? `${base!.replace(/\/$/, '')}/v1/traces`;
  try {
    const u = new URL(endpoint);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw new TyError('E_USAGE', 'the OTLP traces endpoint must be an http(s) URL');
  }
  return {
    endpoint,
    headers: {
      ...keyValues(env.OTEL_EXPORTER_OTLP_HEADERS, 'OTEL_EXPORTER_OTLP_HEADERS'),
      ...keyValues(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'),
    },
    serviceName: env.OTEL_SERVICE_NAME || 'tycli',
    resource: keyValues(env.OTEL_RESOURCE_ATTRIBUTES, 'OTEL_RESOURCE_ATTRIBUTES'),
  };
}

/** A finished span as exported. */
interface Finished {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  start: bigint;
  end: bigint;
  attributes: Attributes;
  events: { name: string; time: bigint; attributes: Attributes }[];
  status: SpanStatus;
}

/** This process's time origin, unix nanoseconds (microsecond precision). */
const ORIGIN_NS = BigInt(Math.round(performance.timeOrigin * 1000)) * 1000n;
/** Now, unix nanoseconds, monotonic within the process. */
const nowNs = (): bigint => ORIGIN_NS + BigInt(Math.round(performance.now() * 1e6));

/** A recording span; `end` hands it to the exporter once. */
class RecordingSpan implements Span {
  readonly #ctx: SpanContext;
  readonly #f: Finished;
  #ended = false;
  constructor(
    ctx: SpanContext,
    name: string,
    kind: number,
    parent: string | undefined,
    attrs: Attributes,
    readonly onEnd: (f: Finished) => void,
  ) {
    this.#ctx = ctx;
    this.#f = {
      traceId: ctx.traceId,
      spanId: ctx.spanId,
      ...(parent ? { parentSpanId: parent } : {}),
      name,
      kind,
      start: nowNs(),
      end: 0n,
      attributes: { ...attrs },
      events: [],
      status: { code: 0 },
    };
  }
  spanContext(): SpanContext {
    return this.#ctx;
  }
  setAttribute(key: string, value: Attributes[string]): this {
    if (!this.#ended && value !== undefined) this.#f.attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    for (const [k, v] of Object.entries(attributes)) this.setAttribute(k, v);
    return this;
  }
  addEvent(name: string, attributes?: unknown): this {
    if (!this.#ended)
      this.#f.events.push({
        name,
        time: nowNs(),
        attributes:
          attributes && typeof attributes === 'object' && !(attributes instanceof Date)
            ? (attributes as Attributes)
            : {},
      });
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    if (!this.#ended) this.#f.status = status;
    return this;
  }
  updateName(name: string): this {
    if (!this.#ended) this.#f.name = name;
    return this;
  }
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#f.end = nowNs();
    this.onEnd(this.#f);
  }
  isRecording(): boolean {
    return !this.#ended;
  }
  recordException(exception: unknown): void {
    const e = exception as { code?: unknown; name?: unknown };
    this.addEvent('exception', {
      'exception.type': typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'Error',
    });
  }
}

/** The active context of each asynchronous flow (OpenTelemetry's ContextManager over AsyncLocalStorage). */
class AlsContextManager implements ContextManager {
  readonly #als = new AsyncLocalStorage<Context>();
  constructor(readonly root: Context) {}
  active(): Context {
    return this.#als.getStore() ?? this.root;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#als.run(context, () => fn.apply(thisArg, args));
  }
  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const self = this;
    return function (this: unknown, ...args: unknown[]) {
      return self.with(context, () => (target as (...a: unknown[]) => unknown).apply(this, args));
    } as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#als.disable();
    return this;
  }
}

/** Most spans held for export; beyond it new spans are dropped (and counted), never the process's memory. */
const MAX_QUEUE = 2048;
const BATCH = 512;

/**
 * Tracing for one process: spans of calls (core's CallTracer) recorded through @opentelemetry/api and sent in batches
 * (every 2 s, or 512 spans) to an OTLP/HTTP endpoint as JSON (`ExportTraceServiceRequest`, OTLP specification 1.x:
 * trace and span ids as hex, times as unix nanoseconds). An export that fails or takes over 10 s is dropped and
 * counted: tracing never slows or fails a call. Spans carry names, ids, timings and flat attributes (tool, revision,
 * principal, decision, capability): never arguments, results or secret values.
 */
export class Tracing {
  readonly tracer: Tracer;
  readonly callTracer: CallTracer;
  readonly #queue: Finished[] = [];
  #dropped = 0;
  #exported = 0;
  #timer: ReturnType<typeof setInterval>;
  #inFlight: Promise<void> = Promise.resolve();
  readonly #api: typeof import('@opentelemetry/api');

  private constructor(
    readonly config: TracingConfig,
    api: typeof import('@opentelemetry/api'),
  ) {
    this.#api = api;
    const manager = new AlsContextManager(api.ROOT_CONTEXT);
    api.context.setGlobalContextManager(manager);
    const enqueue = (f: Finished): void => {
      if (this.#queue.length >= MAX_QUEUE) this.#dropped++;
      else this.#queue.push(f);
      if (this.#queue.length >= BATCH) void this.flush();
    };
    const tracer: Tracer = {
      startSpan: (name: string, options?: SpanOptions, ctx?: Context): Span => {
        const parent = api.trace.getSpanContext(ctx ?? api.context.active());
        const traceId = parent && api.isSpanContextValid(parent) ? parent.traceId : randomBytes(16).toString('hex');
        const sc: SpanContext = { traceId, spanId: randomBytes(8).toString('hex'), traceFlags: 1 };
        return new RecordingSpan(
          sc,
          name,
          // OTLP's SpanKind is the API's plus one (0 is UNSPECIFIED there)
          (options?.kind ?? 0) + 1,
          parent && api.isSpanContextValid(parent) ? parent.spanId : undefined,
          options?.attributes ?? {},
          enqueue,
        );
      },
      startActiveSpan: ((name: string, ...rest: unknown[]) => {
        const fn = rest.pop() as (s: Span) => unknown;
        const options = (rest[0] as SpanOptions | undefined) ?? {};
        const ctx = (rest[1] as Context | undefined) ?? api.context.active();
        const span = tracer.startSpan(name, options, ctx);
        return api.context.with(api.trace.setSpan(ctx, span), fn, undefined, span);
      }) as Tracer['startActiveSpan'],
    };
    const provider: TracerProvider = { getTracer: () => tracer };
    api.trace.setGlobalTracerProvider(provider);
    this.tracer = tracer;
    this.callTracer = {
      span: (name, attributes, fn) =>
        tracer.startActiveSpan(name, { attributes: attributes as Attributes }, async (span) => {
          try {
            return await fn({ set: (a: TraceAttributes) => void span.setAttributes(a as Attributes) });
          } catch (e) {
            span.recordException(e as Error);
            const code = (e as { code?: unknown }).code;
            span.setStatus({ code: 2, message: typeof code === 'string' ? code : 'error' });
            throw e;
          } finally {
            span.end();
          }
        }),
    };
    this.#timer = setInterval(() => void this.flush(), 2000);
    this.#timer.unref();
  }

  /** Start tracing to `config` (loads @opentelemetry/api and registers this provider globally). */
  static async start(config: TracingConfig): Promise<Tracing> {
    // the namespace itself: its `default` export lacks ROOT_CONTEXT and the helpers
    return new Tracing(config, await import('@opentelemetry/api'));
  }

  /** Spans exported so far and spans dropped (queue full or export failed). */
  stats(): { exported: number; dropped: number; queued: number } {
    return { exported: this.#exported, dropped: this.#dropped, queued: this.#queue.length };
  }

  /** A span for an HTTP request continuing the caller's W3C `traceparent` (Trace Context, level 1) when it sent one. */
  requestContext(traceparent: string | undefined): Context {
    const api = this.#api;
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent ?? '');
    if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return api.ROOT_CONTEXT;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: m[1]!,
      spanId: m[2]!,
      traceFlags: Number.parseInt(m[3]!, 16),
      isRemote: true,
    });
  }

  /** Send what is queued (one request per batch); resolves when sent or dropped. */
  flush(): Promise<void> {
    this.#inFlight = this.#inFlight.then(async () => {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, BATCH);
        try {
          const res = await fetch(this.config.endpoint, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...this.config.headers },
            body: JSON.stringify(this.#request(batch)),
            signal: AbortSignal.timeout(10_000),
          });
          await res.arrayBuffer().catch(() => undefined);
          if (res.ok) this.#exported += batch.length;
          else this.#dropped += batch.length;
        } catch {
          this.#dropped += batch.length;
        }
      }
    });
    return this.#inFlight;
  }

  /** The OTLP/HTTP JSON body of a batch. */
  #request(batch: Finished[]): unknown {
    const attrs = (a: Attributes) =>
      Object.entries(a)
        .filter(([, v]) => v !== undefined)
        .map(([key, v]) => ({
          key,
          value:
            typeof v === 'number'
              ? Number.isInteger(v)
                ? { intValue: String(v) }
                : { doubleValue: v }
              : typeof v === 'boolean'
                ? { boolValue: v }
                : { stringValue: String(v) },
        }));
    return {
      resourceSpans: [
        {
          resource: { attributes: attrs({ 'service.name': this.config.serviceName, ...this.config.resource }) },
          scopeSpans: [
            {
              scope: { name: 'tysandbox' },
              spans: batch.map((f) => ({
                traceId: f.traceId,
                spanId: f.spanId,
                ...(f.parentSpanId ? { parentSpanId: f.parentSpanId } : {}),
                name: f.name,
                kind: f.kind,
                startTimeUnixNano: String(f.start),
                endTimeUnixNano: String(f.end),
                attributes: attrs(f.attributes),
                events: f.events.map((e) => ({
                  timeUnixNano: String(e.time),
                  name: e.name,
                  attributes: attrs(e.attributes),
                })),
                status: f.status.message ? { code: f.status.code, message: f.status.message } : { code: f.status.code },
              })),
            },
          ],
        },
      ],
    };
  }

  /** Stop the timer and send what is left. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
    this.#api.trace.disable();
    this.#api.context.disable();
  }
}
