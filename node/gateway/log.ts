// Structured logs of a gateway instance: one JSON object per line (time, level, msg, fields); Node host, trusted side.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A logger that writes one JSON line per event; fields are flat values (never arguments, results or secrets). */
export interface JsonLog {
  log(level: LogLevel, msg: string, fields?: Record<string, string | number | boolean | undefined>): void;
}

/**
 * Log to `out` as JSON Lines: `{"time":"2026-...Z","level":"info","msg":"request","method":"POST",...}`. Strings are
 * cut at 2048 characters; undefined fields are left out; a field cannot replace time, level or msg. `format: 'text'`
 * writes `time level msg key=value ...` for a person at a terminal instead.
 */
export function jsonLog(out: { write(s: string): unknown }, format: 'json' | 'text' = 'json'): JsonLog {
  return {
    log(level, msg, fields = {}) {
      const rec: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(fields)) {
        if (v === undefined || k === 'time' || k === 'level' || k === 'msg') continue;
        rec[k] = typeof v === 'string' ? v.slice(0, 2048) : v;
      }
      const time = new Date().toISOString();
      if (format === 'json') out.write(`${JSON.stringify({ time, level, msg, ...rec })}\n`);
      else
        out.write(
          `${time} ${level} ${msg}${Object.entries(rec)
            .map(([k, v]) => ` ${k}=${JSON.stringify(v)}`)
            .join('')}\n`,
        );
    },
  };
}

/** A logger that drops everything. */
export const NO_LOG: JsonLog = { log: () => undefined };
