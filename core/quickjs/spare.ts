// One started QuickJS sandbox kept ready for the next revision of a sandbox host thread or worker: booting the guest
// runtime (parsing and running it inside QuickJS) is most of a cold start, so it is done while the thread is idle;
// runs in the QuickJS sandbox host (the CLI's sandbox host threads, the browser's sandbox worker), sandbox side.
//
// A spare is an ordinary new sandbox that no revision has seen: no tool code has run in it, and its revision is loaded
// only after it is given out, exactly as in a sandbox created on demand. It is given out only for the same memory and
// stack limits it was started with (its linear memory's maximum is fixed when it is created).
import { DEFAULT_STACK_BYTES, MIN_MEMORY_MB } from './limits.js';
import type { QuickJsDeath, QuickJsEngine, QuickJsSandbox, QuickJsSandboxOptions } from './instance.js';

/** The sandbox options a spare was started with; pointed at its owner's callbacks when it is given out. */
type Forward = QuickJsSandboxOptions & { onHeld(bytes: number): void };

interface Spare {
  key: string;
  fwd: Forward;
  sandbox: QuickJsSandbox | undefined;
  /** Messages the guest sent while booting (its `ready`), replayed to the owner. */
  sent: string[];
  held: number;
  died: QuickJsDeath | undefined;
}

const keyOf = (memoryMb: number, stackBytes: number | undefined) =>
  `${Math.max(MIN_MEMORY_MB, Math.ceil(memoryMb))}:${stackBytes ?? DEFAULT_STACK_BYTES}`;

/** How long a thread must have had no message before a spare is started there, ms. */
export const SPARE_IDLE_MS = 25;

/** Creates sandboxes through an engine, from a spare started beforehand when one fits. */
export class SpareSandboxes {
  readonly #engine: QuickJsEngine;
  #spare: Spare | undefined;
  #wanted: { memoryMb: number; stackBytes: number | undefined } | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(engine: QuickJsEngine) {
    this.#engine = engine;
  }

  /**
   * Start a spare of these limits once the thread has been idle SPARE_IDLE_MS (no `busy()` meanwhile): after a
   * sandbox was created, the next one will likely have the same limits.
   */
  later(memoryMb: number, stackBytes?: number): void {
    this.#wanted = { memoryMb, stackBytes };
    this.busy();
  }

  /** A message arrived: a spare that is due waits for the next idle moment (it must not delay a call). */
  busy(): void {
    if (!this.#wanted) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const w = this.#wanted;
      this.#wanted = undefined;
      if (w) void this.prepare(w.memoryMb, w.stackBytes);
    }, SPARE_IDLE_MS);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /**
   * Start a spare for sandboxes of `memoryMb` MiB and `stackBytes` (default DEFAULT_STACK_BYTES), replacing one of
   * other limits; a no-op when one of these limits is there. Errors are dropped (the next create starts its own).
   */
  async prepare(memoryMb: number, stackBytes?: number): Promise<void> {
    const key = keyOf(memoryMb, stackBytes);
    if (this.#spare?.key === key) return;
    this.#spare?.sandbox?.destroy();
    this.#spare = undefined;
    const s: Spare = {
      key,
      sandbox: undefined,
      sent: [],
      held: 0,
      died: undefined,
      fwd: {
        memoryMb,
        ...(stackBytes !== undefined ? { stackBytes } : {}),
        onMessage: (text) => s.sent.push(text),
        onDeath: (d) => {
          s.died = d;
        },
        onHeld: (bytes) => {
          s.held = bytes;
        },
      },
    };
    this.#spare = s;
    try {
      s.sandbox = await this.#engine.create(s.fwd);
    } catch {
      if (this.#spare === s) this.#spare = undefined;
      return;
    }
    if (this.#spare !== s) s.sandbox.destroy();
  }

  /** End the spare, if any, and any spare still due. */
  discard(): void {
    this.#wanted = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const s = this.#spare;
    this.#spare = undefined;
    s?.sandbox?.destroy();
  }

  /**
   * A sandbox for `opts`: the spare when it is started, alive and of the same limits (its boot messages go to
   * `opts.onMessage` before this returns, as a new sandbox's do), else a new one (QuickJsEngine.create).
   * @throws Error as QuickJsEngine.create
   */
  async create(opts: QuickJsSandboxOptions): Promise<QuickJsSandbox> {
    const s = this.#spare;
    if (s?.sandbox && s.key === keyOf(opts.memoryMb, opts.stackBytes)) {
      this.#spare = undefined;
      const sb = s.sandbox;
      if (s.died === undefined && sb.alive) {
        s.fwd.onMessage = opts.onMessage;
        s.fwd.onDeath = opts.onDeath;
        s.fwd.onHeld = (bytes) => opts.onHeld?.(bytes);
        if (opts.interruptRequested) s.fwd.interruptRequested = opts.interruptRequested;
        sb.claimed();
        for (const text of s.sent) opts.onMessage(text);
        opts.onHeld?.(s.held);
        return sb;
      }
      sb.destroy();
    }
    return this.#engine.create(opts);
  }
}
