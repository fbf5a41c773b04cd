// Prometheus metrics of a gateway instance (prom-client): calls by tool, outcome and engine, latency, sandboxes,
// queue, refusals, asks pending; Node host, trusted side.
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RefusalReason } from './admission.js';

/** One finished call, as the Invoker reports it (core/exec/invoke.ts InvokerOptions.observe). */
export interface CallObservation {
  tool: string;
  /** `node`, `deno`, `quickjs`, `native`, `external` */
  engine: string;
  /** `ok`, or the error code */
  outcome: string;
  /** Seconds from admission to the answer. */
  seconds: number;
}

/** Live values read at each scrape. */
export interface GaugeSources {
  sandboxesAlive?: () => number;
  queueDepth?: () => number;
  asksPending?: () => number;
  connections?: () => number;
  sessions?: () => number;
}

/** Latency buckets, seconds: 1 ms .. 2 min (a warm call is a few ms; a cold sandbox start tens to hundreds). */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];

/**
 * The metrics of one process, in a registry of its own (never prom-client's global one), exposed at `/metrics` in the
 * Prometheus text format 0.0.4:
 * - `tycli_calls_total{tool,outcome,engine}` and `tycli_call_duration_seconds{tool,engine}` (histogram)
 * - `tycli_refusals_total{reason}` (admission: connections, calls, principal-calls, sessions, principal-sessions)
 * - gauges read at scrape time: `tycli_sandboxes_alive`, `tycli_queue_depth` (calls admitted and not yet answered),
 *   `tycli_asks_pending`, `tycli_http_connections`, `tycli_sessions`
 * - the process's own (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `nodejs_eventloop_lag_seconds`)
 * Tool names are the only free-form label; they come from the registry (bounded by what is registered).
 */
export class GatewayMetrics {
  readonly registry: Registry;
  readonly #calls: Counter<'tool' | 'outcome' | 'engine'>;
  readonly #latency: Histogram<'tool' | 'engine'>;
  readonly #refusals: Counter<'reason'>;

  private constructor(prom: typeof import('prom-client'), sources: GaugeSources) {
    this.registry = new prom.Registry();
    const registers = [this.registry];
    prom.collectDefaultMetrics({ register: this.registry });
    this.#calls = new prom.Counter({
      name: 'tycli_calls_total',
      help: 'Tool calls answered, by tool, outcome (ok or the error code) and engine.',
      labelNames: ['tool', 'outcome', 'engine'],
      registers,
    });
    this.#latency = new prom.Histogram({
      name: 'tycli_call_duration_seconds',
      help: 'Time from admission to answer of a tool call, seconds.',
      labelNames: ['tool', 'engine'],
      buckets: BUCKETS,
      registers,
    });
    this.#refusals = new prom.Counter({
      name: 'tycli_refusals_total',
      help: 'Requests refused by admission control (answered 429 with E_BUSY), by reason.',
      labelNames: ['reason'],
      registers,
    });
    const gauge = (name: string, help: string, read: (() => number) | undefined): void => {
      new prom.Gauge({
        name,
        help,
        registers,
        collect() {
          (this as Gauge).set(read?.() ?? 0);
        },
      });
    };
    gauge('tycli_sandboxes_alive', 'Sandboxes alive now (retained and running).', sources.sandboxesAlive);
    gauge('tycli_queue_depth', 'Calls admitted and not yet answered.', sources.queueDepth);
    gauge('tycli_asks_pending', 'Questions waiting for a person.', sources.asksPending);
    gauge('tycli_http_connections', 'HTTP connections open.', sources.connections);
    gauge('tycli_sessions', 'Protocol and MCP sessions open.', sources.sessions);
  }

  /** Build the metrics (prom-client is loaded here, not by hosts that never serve metrics). */
  static async create(sources: GaugeSources = {}): Promise<GatewayMetrics> {
    const m = (await import('prom-client')) as unknown as { default?: typeof import('prom-client') };
    return new GatewayMetrics((m.default ?? m) as typeof import('prom-client'), sources);
  }

  observeCall(o: CallObservation): void {
    this.#calls.inc({ tool: o.tool, outcome: o.outcome, engine: o.engine });
    this.#latency.observe({ tool: o.tool, engine: o.engine }, Math.max(0, o.seconds));
  }

  refused(reason: RefusalReason): void {
    this.#refusals.inc({ reason });
  }

  /** The exposition text and its content type. */
  async expose(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
