// Hooks a host gives the invoker and the gate to trace and count calls (OpenTelemetry, Prometheus on the Node
// gateway); core, trusted side.
import type { ToolManifest } from '../../protocol/manifest.js';

/** Attribute values of a span: flat, never arguments, results or secret values. */
export type TraceAttributes = Record<string, string | number | boolean>;

/** The span a traced step runs in: more attributes can be added once they are known. */
export interface TraceSpan {
  set(attributes: TraceAttributes): void;
}

/**
 * Records the steps of a call as nested spans (`tysandbox.call` > `tysandbox.gate` > `tysandbox.ask`,
 * `tysandbox.sandbox` > `tysandbox.capability`). `span` runs `fn` inside a span named `name` (a child of the span
 * active where it is called) and ends it when `fn` settles, marking it failed with the error's code when `fn` throws.
 * A host without tracing gives none (NO_TRACE).
 */
export interface CallTracer {
  span<T>(name: string, attributes: TraceAttributes, fn: (span: TraceSpan) => Promise<T>): Promise<T>;
}

const NO_SPAN: TraceSpan = { set: () => undefined };
/** The tracer of a host that does not trace: runs `fn` with a span that records nothing. */
export const NO_TRACE: CallTracer = { span: (_name, _attrs, fn) => fn(NO_SPAN) };

/** One answered call, as the invoker reports it to its observer (metrics). Times in seconds. */
export interface CallReport {
  /** The tool name as called (before `@`). */
  tool: string;
  /** The resolved revision's execution; undefined when the call failed before the tool was resolved. */
  execution?: ToolManifest['execution'];
  /** `ok`, or the error code. */
  outcome: string;
  /** From admission to answer. */
  seconds: number;
  principal: string;
}
