// Control messages between a tysandbox host and a QuickJS sandbox host (the CLI's sandbox host process, the browser's
// sandbox worker), and their checks; shared by both hosts, trusted side for the checks (what the sandbox host sends is
// untrusted: a QuickJS escape would control it).
//
// Protocol messages of each sandbox (protocol/wire.ts) travel beside these, tagged with the sandbox id (`sid`): on
// the command line as `<sid> <json>` lines, in the browser over a MessagePort per sandbox. These control messages
// create and end sandboxes and report their ends and the memory they hold.

/** Codes a sandbox's end may carry (core/quickjs/instance.ts QuickJsDeath). */
export const DEATH_CODES = ['E_MEMORY_LIMIT', 'E_TIMEOUT', 'E_TOOL_FAILED', 'E_SANDBOX_FAILED'] as const;
export type DeathCode = (typeof DEATH_CODES)[number];

/** tysandbox host -> sandbox host. */
export type ToSandboxHost =
  /** Start sandbox `sid` with a heap limit of `memoryMb` MiB and a QuickJS stack limit of `stackKb` KiB (optional). */
  | { op: 'create'; sid: number; memoryMb: number; stackKb?: number }
  /** The next load or call of `sid` may run `ms` milliseconds. */
  | { op: 'deadline'; sid: number; ms: number }
  /** End sandbox `sid` now (running code is interrupted). */
  | { op: 'destroy'; sid: number };

/** Sandbox host -> tysandbox host. */
export type FromSandboxHost =
  /** The sandbox host started: engine version, threads running sandboxes. */
  | { op: 'hello'; version: string; workers: number }
  /** Sandbox `sid` ended by itself (memory, time, engine fault) or could not start; nothing more comes from it. */
  | { op: 'died'; sid: number; code: DeathCode; message: string; name?: string }
  /**
   * What sandbox `sid` may hold now, bytes (core/quickjs/memory.ts heldBytesOf): after its start and each growth of
   * its memory. For the host's memory budget only: the process's or worker's own limit bounds it whatever it says.
   */
  | { op: 'held'; sid: number; bytes: number };

const SID_MAX = 2 ** 31 - 1;
const isSid = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= SID_MAX;

/**
 * Check one control message from a sandbox host (parsed JSON): returns it when it has exactly one of the shapes of
 * FromSandboxHost with in-range values, else undefined (the caller treats the sandbox host as broken).
 */
export function fromSandboxHost(v: unknown): FromSandboxHost | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const m = v as Record<string, unknown>;
  const keys = Object.keys(m);
  if (m.op === 'hello') {
    if (keys.length !== 3 || typeof m.version !== 'string' || m.version.length > 64) return undefined;
    if (typeof m.workers !== 'number' || !Number.isInteger(m.workers) || m.workers < 1 || m.workers > 64)
      return undefined;
    return { op: 'hello', version: m.version, workers: m.workers };
  }
  if (m.op === 'died') {
    const n = 'name' in m ? 5 : 4;
    if (keys.length !== n || !isSid(m.sid)) return undefined;
    if (typeof m.code !== 'string' || !(DEATH_CODES as readonly string[]).includes(m.code)) return undefined;
    if (typeof m.message !== 'string' || m.message.length > 1000) return undefined;
    if ('name' in m && (typeof m.name !== 'string' || !/^[A-Za-z]{1,32}$/.test(m.name))) return undefined;
    const out: FromSandboxHost = { op: 'died', sid: m.sid, code: m.code as DeathCode, message: m.message };
    if (typeof m.name === 'string') out.name = m.name;
    return out;
  }
  if (m.op === 'held') {
    if (keys.length !== 3 || !isSid(m.sid)) return undefined;
    if (typeof m.bytes !== 'number' || !Number.isInteger(m.bytes) || m.bytes < 0 || m.bytes > 2 ** 42) return undefined;
    return { op: 'held', sid: m.sid, bytes: m.bytes };
  }
  return undefined;
}

/**
 * Check one control message from a tysandbox host (parsed JSON) as the sandbox host reads it; undefined for anything
 * else (ignored there).
 */
export function toSandboxHost(v: unknown): ToSandboxHost | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const m = v as Record<string, unknown>;
  if (!isSid(m.sid)) return undefined;
  if (m.op === 'create') {
    if (typeof m.memoryMb !== 'number' || !(m.memoryMb >= 1 && m.memoryMb <= 16384)) return undefined;
    const out: ToSandboxHost = { op: 'create', sid: m.sid, memoryMb: m.memoryMb };
    if (m.stackKb !== undefined) {
      if (typeof m.stackKb !== 'number' || !(m.stackKb >= 16 && m.stackKb <= 65536)) return undefined;
      out.stackKb = m.stackKb;
    }
    return out;
  }
  if (m.op === 'deadline') {
    if (typeof m.ms !== 'number' || !(m.ms > 0 && m.ms <= 24 * 3600 * 1000)) return undefined;
    return { op: 'deadline', sid: m.sid, ms: m.ms };
  }
  if (m.op === 'destroy') return { op: 'destroy', sid: m.sid };
  return undefined;
}
