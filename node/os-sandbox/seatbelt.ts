// Generates the macOS Seatbelt `(deny default)` profile and sandbox-exec command line (paths as parameters); Node host,
// trusted side.
import { realpathSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';
import { TyError } from '../../core/errors.js';
import { ulimitPrefix, type OsLimits } from './limits.js';
import type { SpawnRequest, SpawnWrapperFn } from './bwrap.js';

export interface SeatbeltOptions {
  /** Default /usr/bin/sandbox-exec. */
  sandboxExecPath?: string;
  /** Applied with a `/bin/sh` ulimit prefix around sandbox-exec (no RLIMIT_NPROC on macOS; see limits.ts). */
  limits?: OsLimits;
  /** Extra read-only folders the runtime needs (e.g. a Homebrew node's Cellar folder). */
  runtimeReadPaths?: string[];
  /** Path canonicalizer (realpath); injectable so the generator can be unit-tested off macOS. */
  realpath?: (p: string) => string;
}

/**
 * Read-only system locations every macOS process needs to load (dyld shared cache, system libraries, ICU, time zones).
 */
export const SYSTEM_READ_SUBPATHS = [
  '/usr/lib',
  '/usr/share/icu',
  '/System/Library',
  '/System/Volumes/Preboot/Cryptexes',
  '/Library/Apple/usr/lib',
  '/private/var/db/dyld',
  '/private/var/db/timezone',
];
export const SYSTEM_READ_LITERALS = [
  '/',
  '/dev/null',
  '/dev/random',
  '/dev/urandom',
  '/dev/zero',
  '/private/etc/localtime',
];

/**
 * The profile text for `n` read-only and `m` writable parameterized folders. No path ever appears in the
 * text: the runtime binary is `(param "RUNTIME")`, folders are `READ_i` / `WRITE_i`, passed with
 * `sandbox-exec -D KEY=VALUE`, so a path cannot change the profile's meaning. Everything not allowed is
 * denied: network of every kind, process-fork, exec of anything but the runtime, writes outside grants.
 * Format: SBPL (the Scheme-like Sandbox Profile Language read by sandbox-exec(1)).
 */
export function seatbeltProfile(readCount: number, writeCount: number): string {
  const q = (s: string) => `"${s}"`;
  const lines = [
    '(version 1)',
    '(deny default)',
    '(deny network*)',
    '(allow process-exec (literal (param "RUNTIME")))',
    '(allow signal (target self))',
    '(allow process-info* (target self))',
    '(allow sysctl-read)',
    '(allow file-read-metadata)',
    '(allow file-read*',
    ...SYSTEM_READ_SUBPATHS.map((p) => `  (subpath ${q(p)})`),
    ...SYSTEM_READ_LITERALS.map((p) => `  (literal ${q(p)})`),
    '  (literal (param "RUNTIME"))',
    ...Array.from({ length: readCount }, (_, i) => `  (subpath (param "READ_${i}"))`),
    ...Array.from({ length: writeCount }, (_, i) => `  (subpath (param "WRITE_${i}"))`),
    ')',
    '(allow file-write-data (literal "/dev/null"))',
  ];
  if (writeCount > 0) {
    lines.push(
      '(allow file-write*',
      ...Array.from({ length: writeCount }, (_, i) => `  (subpath (param "WRITE_${i}"))`),
      ')',
    );
  }
  return `${lines.join('\n')}\n`;
}

function fail(message: string): never {
  throw new TyError('E_SANDBOX_FAILED', message);
}

/**
 * The full argv for `req` under sandbox-exec: `[/bin/sh -c 'ulimit ...; exec "$@"' sh] sandbox-exec -p PROFILE
 * -D RUNTIME=... -D READ_i=... -D WRITE_i=... -- command args`. The environment is the runtime's own
 * (sandbox-exec has no clearenv; the runtime passes a minimal one). A new session (no controlling
 * terminal) comes from the runtime spawning detached (setsid).
 * @throws TyError E_SANDBOX_FAILED (a path is relative or missing, or is `/`)
 */
export function seatbeltArgv(req: SpawnRequest, opts: SeatbeltOptions = {}): string[] {
  const real = (p: string, what: string): string => {
    if (typeof p !== 'string' || !isAbsolute(p) || p.includes('\0')) fail(`${what} must be an absolute path`);
    let r: string;
    try {
      r = (opts.realpath ?? realpathSync)(p);
    } catch {
      return fail(`${what} does not exist: ${p}`);
    }
    if (r === '/') fail('binding / into a sandbox is not allowed');
    return r;
  };
  const runtime = real(req.command, 'the runtime binary');
  const reads = [
    ...new Set([
      ...(opts.runtimeReadPaths ?? []).map((p) => real(p, 'a runtime path')),
      dirname(runtime),
      ...req.readOnlyPaths.map((p) => real(p, 'a read-only path')),
    ]),
  ];
  const writes = [...new Set(req.writablePaths.map((p) => real(p, 'a writable folder grant')))];
  const argv: string[] = [];
  if (opts.limits) argv.push(...ulimitPrefix(opts.limits, { nproc: false }));
  argv.push(
    opts.sandboxExecPath ?? '/usr/bin/sandbox-exec',
    '-p',
    seatbeltProfile(reads.length, writes.length),
    '-D',
    `RUNTIME=${runtime}`,
  );
  for (const [i, p] of reads.entries()) argv.push('-D', `READ_${i}=${p}`);
  for (const [i, p] of writes.entries()) argv.push('-D', `WRITE_${i}=${p}`);
  argv.push('--', req.command, ...req.args);
  return argv;
}

/** A SpawnWrapper for node/sandbox/runtime.ts on macOS. @throws TyError E_SANDBOX_FAILED */
export function createSeatbeltWrapper(opts: SeatbeltOptions = {}): SpawnWrapperFn {
  return (req) => {
    const argv = seatbeltArgv(req, opts);
    return { command: argv[0] as string, args: argv.slice(1), env: { ...req.env } };
  };
}
