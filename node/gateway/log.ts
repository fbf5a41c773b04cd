// Structured logs of a gateway instance: one JSON object per line (time, level, msg, fields), written without ever
// blocking the event loop; Node host, trusted side.
import { write as fsWrite } from 'node:fs';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A logger that writes one JSON line per event; fields are flat values (never arguments, results or secrets). */
export interface JsonLog {
  log(level: LogLevel, msg: string, fields?: Record<string, string | number | boolean | undefined>): void;
  /** Lines dropped because the output could not keep up. */
  readonly dropped: number;
  /** Resolves once every line accepted so far is written (or dropped). */
  flush(): Promise<void>;
}

/** Bytes of log lines held while the output is slow; beyond it lines are dropped and counted. */
const MAX_PENDING = 1 << 20;

/** Where lines go: a file descriptor (written asynchronously through libuv), or a stream. */
export type LogOutput = number | { write(s: string): unknown };

/**
 * Log to `out` as JSON Lines: `{"time":"2026-...Z","level":"info","msg":"request","method":"POST",...}`. Strings are
 * cut at 2048 characters; undefined fields are left out; a field cannot replace time, level or msg. `format: 'text'`
 * writes `time level msg key=value ...` for a person at a terminal instead.
 *
 * With a descriptor (stderr: 2), lines are batched and written asynchronously: Node writes to a pipe synchronously,
 * and a log reader that falls behind would then stop the whole server (no accepts: the kernel resets waiting
 * connections). At most 1 MiB waits; beyond it lines are dropped and a line saying how many follows.
 */
export function jsonLog(out: LogOutput, format: 'json' | 'text' = 'json'): JsonLog {
  let pending: string[] = [];
  let pendingBytes = 0;
  let dropped = 0;
  let reported = 0;
  let writing: Promise<void> | undefined;
  const line = (level: LogLevel, msg: string, fields: Record<string, unknown>): string => {
    const rec: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields)) {
      if (v === undefined || k === 'time' || k === 'level' || k === 'msg') continue;
      rec[k] = typeof v === 'string' ? v.slice(0, 2048) : v;
    }
    const time = new Date().toISOString();
    if (format === 'json') return `${JSON.stringify({ time, level, msg, ...rec })}\n`;
    return `${time} ${level} ${msg}${Object.entries(rec)
      .map(([k, v]) => ` ${k}=${JSON.stringify(v)}`)
      .join('')}\n`;
  };
  const drain = (fd: number): Promise<void> =>
    (writing ??= (async () => {
      while (pending.length > 0) {
        if (dropped > reported) {
          pending.push(line('warn', 'log lines dropped', { dropped: dropped - reported }));
          reported = dropped;
        }
        const text = Buffer.from(pending.join(''));
        pending = [];
        pendingBytes = 0;
        let off = 0;
        while (off < text.length) {
          const n = await new Promise<number>((resolve) =>
            fsWrite(fd, text, off, text.length - off, null, (err, written) => resolve(err ? -1 : written)),
          );
          if (n <= 0) break;
          off += n;
        }
      }
      writing = undefined;
    })());
  return {
    log(level, msg, fields = {}) {
      const text = line(level, msg, fields);
      if (typeof out !== 'number') {
        out.write(text);
        return;
      }
      if (pendingBytes + text.length > MAX_PENDING) {
        dropped++;
        return;
      }
      pending.push(text);
      pendingBytes += text.length;
      if (!writing) setImmediate(() => void drain(out));
    },
    get dropped() {
      return dropped;
    },
    async flush() {
      if (typeof out === 'number') while (pending.length > 0 || writing) await (writing ?? drain(out));
    },
  };
}

/** A logger that drops everything. */
export const NO_LOG: JsonLog = { log: () => undefined, dropped: 0, flush: async () => undefined };
