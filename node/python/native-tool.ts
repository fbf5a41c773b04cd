// Native Python tool for the CLI: trusted-native, runs python3 with the user's authority after session approval; Node
// host, trusted side.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants as fsc, realpathSync, statSync } from 'node:fs';
import { chown, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { TyError } from '../../core/errors.js';
import { askRefusalError, type Asker } from '../../core/ask/router.js';
import type { Question } from '../../core/exec/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { makeWorkDir, removeWorkDir, setWorkDirGroup } from './work-dirs.js';
import { killGroup } from '../process/groups.js';

/** A usable interpreter: the real executable (sys.executable, not a shim) and what it needs to read. */
export interface PythonInfo {
  /** Absolute path of the interpreter binary. */
  path: string;
  /** e.g. `3.11.7` */
  version: string;
  /** sys.prefix and sys.base_prefix: the folders the interpreter loads its library from. */
  prefixes: string[];
}

/** What the tool wants to spawn before OS isolation (same shape as node/os-sandbox's SpawnRequest). */
export interface PythonSpawnRequest {
  command: string;
  args: string[];
  /** The complete environment of the process. */
  env: Record<string, string>;
  readOnlyPaths: string[];
  writablePaths: string[];
  /**
   * Paths the sandbox's uid must own (the work folder and script); the wrapper chowns them when it runs the sandbox as
   * another uid.
   */
  ownedPaths?: string[];
}
/** Wraps a spawn in OS isolation (e.g. bubblewrap); returns the process to spawn instead, with exactly `env`. */
export type SpawnWrapper = (s: PythonSpawnRequest) => {
  command: string;
  args: string[];
  env: Record<string, string>;
  release?: () => void;
};

const PROBE =
  'import sys, json; print(json.dumps([sys.executable, sys.version.split()[0], sys.prefix, sys.base_prefix]))';

/**
 * Find python3: each name in `names` (default `python3`) on `env.PATH` (default the CLI's own PATH) that
 * is an executable file and answers a version probe within `timeoutMs` (default 5000) with Python 3.
 * Shims (pyenv, asdf) are resolved to the real binary via sys.executable. Undefined when none is found.
 */
export function detectPython(
  opts: { names?: string[]; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): PythonInfo | undefined {
  const env = opts.env ?? process.env;
  const dirs = (env.PATH ?? '').split(delimiter).filter((d) => d !== '' && isAbsolute(d));
  for (const name of opts.names ?? ['python3']) {
    for (const dir of dirs) {
      const candidate = join(dir, name);
      try {
        if (!statSync(candidate).isFile()) continue;
        accessSync(candidate, fsc.X_OK);
      } catch {
        continue;
      }
      const r = spawnSync(candidate, ['-I', '-c', PROBE], {
        env,
        encoding: 'utf8',
        timeout: opts.timeoutMs ?? 5000,
        maxBuffer: 64 * 1024,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      if (r.status !== 0 || typeof r.stdout !== 'string') continue;
      try {
        const [exe, version, prefix, basePrefix] = JSON.parse(r.stdout.trim()) as unknown[];
        if (typeof exe !== 'string' || !isAbsolute(exe) || typeof version !== 'string' || !version.startsWith('3.'))
          continue;
        const prefixes = [
          ...new Set([prefix, basePrefix].filter((p): p is string => typeof p === 'string' && isAbsolute(p))),
        ];
        return { path: exe, version, prefixes };
      } catch {}
    }
  }
  return undefined;
}

/** The registry entry key of the native Python function (manifest `execution.entry`). */
export const PYTHON_NATIVE_ENTRY = 'tysandbox/python-native/v1';
/** Largest accepted `code` or `stdin`, bytes of UTF-16 length (1 MiB). */
export const MAX_PYTHON_INPUT = 1024 * 1024;

/** The `python` tool's manifest: trusted-native; the host registers the function under its revision. */
export function pythonToolManifest(): ToolManifest {
  return {
    name: 'python',
    description:
      "Run Python 3 code natively on this computer (not in a sandbox): it runs with the user's own " +
      'authority over files, network and programs. Asks the user for approval before the first run ' +
      'in a session. Returns exitCode, stdout and stderr.',
    parameters: {
      type: 'object',
      properties: {
        code: { type: 'string', maxLength: MAX_PYTHON_INPUT, description: 'Python 3 source to run as a script' },
        stdin: {
          type: 'string',
          maxLength: MAX_PYTHON_INPUT,
          description: 'Text given to the script on standard input',
        },
      },
      required: ['code'],
      additionalProperties: false,
    },
    execution: { kind: 'trusted-native', entry: PYTHON_NATIVE_ENTRY },
  };
}

/** The approval question: says plainly that the code runs with the user's authority. */
export function pythonApprovalQuestion(info: PythonInfo, id = 'python-session'): Question {
  return {
    id,
    title: 'Allow the python tool to run code natively for the rest of this session?',
    details: [
      `interpreter: ${info.path} (Python ${info.version})`,
      'The code runs as YOU, with your authority: it can read, change and delete your files, use the network and start programs.',
      'It is not sandboxed (unless OS isolation wraps it); the code is written by the model, not reviewed by a person.',
      'Allowing covers every python call until this tycli session ends.',
    ],
    suggestedRule: 'python(*)',
    scopes: ['once', 'session'],
  };
}

export interface PythonToolOptions {
  python: PythonInfo;
  /** Asks for session approval before the first run. Without one (and not preapproved), every run is refused. */
  asker?: Asker;
  /** Approved already (e.g. a `python(*)` allow rule); the question is skipped. */
  preapproved?: boolean;
  /**
   * The permission rules' verdict for `python(*)`, consulted before asking (deny wins, then allow, else ask);
   * e.g. from core/policy/permissions.ts evaluated by the host. Absent: ask.
   */
  policy?: () => PythonPolicyVerdict | Promise<PythonPolicyVerdict>;
  /**
   * Told each approval decision before any code runs (awaited: e.g. an audit record made durable first), with
   * the caller's principal: a rule's verdict (list `deny` / `allow`, the rule and its scope) or a person's answer
   * (list `person`; the channel). Not called again while the session's approval holds.
   */
  onDecision?: (d: PythonDecision, principal: string | undefined) => Promise<void>;
  /** Wall-clock limit per run, ms (default 30 000). */
  timeoutMs?: number;
  /** Cap on stdout + stderr together, bytes (default 1 MiB); more kills the process (E_OUTPUT_LIMIT). */
  outputBytes?: number;
  /** OS isolation around the interpreter (ISOLATION's bwrap/seatbelt wrapper). */
  wrap?: SpawnWrapper;
  /** Parent folder of the per-run working folder (default os.tmpdir()). */
  workRoot?: string;
  /**
   * Hand the per-run working folder and script to this host uid/gid before spawning (ISOLATION: when the
   * OS wrapper runs the sandbox as another uid, e.g. 65534 because the CLI runs as root; probe.dropTo).
   */
  sandboxOwner?: { uid: number; gid: number };
}

/** The `python(*)` rules' verdict: the effect alone, or with the deciding rule and its scope. */
export type PythonPolicyVerdict =
  | 'allow'
  | 'deny'
  | 'ask'
  | { effect: 'allow' | 'deny' | 'ask'; rule?: string; scope?: string };

/** One approval decision of native Python (see PythonToolOptions.onDecision). */
export interface PythonDecision {
  allow: boolean;
  list: 'deny' | 'allow' | 'person';
  rule: string;
  scope: string;
  channel?: string;
}

export interface PythonResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

function parseArgs(args: unknown): { code: string; stdin: string } {
  if (args === null || typeof args !== 'object' || Array.isArray(args))
    throw new TyError('E_INVALID_ARGS', 'python takes an object {code, stdin?}');
  const a = args as Record<string, unknown>;
  for (const k of Object.keys(a))
    if (k !== 'code' && k !== 'stdin') throw new TyError('E_INVALID_ARGS', `python does not take "${k.slice(0, 40)}"`);
  if (typeof a.code !== 'string' || a.code.length > MAX_PYTHON_INPUT)
    throw new TyError('E_INVALID_ARGS', `code must be a string of at most ${MAX_PYTHON_INPUT} characters`);
  if (a.stdin !== undefined && (typeof a.stdin !== 'string' || a.stdin.length > MAX_PYTHON_INPUT))
    throw new TyError('E_INVALID_ARGS', `stdin must be a string of at most ${MAX_PYTHON_INPUT} characters`);
  return { code: a.code, stdin: (a.stdin as string | undefined) ?? '' };
}

/**
 * The native Python tool. `run` asks once per instance (one instance per tycli session) for approval,
 * then runs `code` as a script with `python -I -B` in a fresh 0700 working folder (node/python/work-dirs.ts: removed
 * after the process tree is gone, on every exit path: result, timeout, abort, host exit; swept after a SIGKILL),
 * an environment of only PATH=/usr/local/bin:/usr/bin:/bin, HOME and TMPDIR (the working folder),
 * LANG/LC_ALL=C.UTF-8 and PYTHONIOENCODING=utf-8, its own process group (killed whole on exit,
 * timeout, abort or output overflow).
 * @throws TyError E_INVALID_ARGS, E_CAPABILITY_DENIED (not approved), E_TIMEOUT, E_OUTPUT_LIMIT, E_ABORTED,
 *   E_TOOL_FAILED (could not start)
 */
export class PythonTool {
  private approved: boolean;
  private pendingApproval: Promise<void> | undefined;
  private readonly timeoutMs: number;
  private readonly outputBytes: number;

  constructor(private readonly opts: PythonToolOptions) {
    this.approved = opts.preapproved === true;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.outputBytes = opts.outputBytes ?? 1024 * 1024;
  }

  get isApproved(): boolean {
    return this.approved;
  }

  private async approve(signal?: AbortSignal, principal?: string): Promise<void> {
    if (this.approved) return;
    if (!this.pendingApproval) {
      this.pendingApproval = (async () => {
        const raw = this.opts.policy ? await this.opts.policy() : 'ask';
        const verdict = typeof raw === 'string' ? { effect: raw } : raw;
        const told = (d: PythonDecision) => this.opts.onDecision?.(d, principal);
        if (verdict.effect === 'deny') {
          await told({
            allow: false,
            list: 'deny',
            rule: verdict.rule ?? 'python(*)',
            scope: verdict.scope ?? 'settings',
          });
          throw new TyError('E_CAPABILITY_DENIED', 'running native Python is denied by a python(*) deny rule');
        }
        if (verdict.effect === 'allow') {
          await told({
            allow: true,
            list: 'allow',
            rule: verdict.rule ?? 'python(*)',
            scope: verdict.scope ?? 'settings',
          });
          this.approved = true;
          return;
        }
        const q = pythonApprovalQuestion(this.opts.python);
        const out = this.opts.asker
          ? await this.opts.asker.ask(q, signal)
          : ({ allow: false, reason: 'no-channel', suggestedRule: q.suggestedRule } as const);
        if (out.allow) {
          await told({
            allow: true,
            list: 'person',
            rule: `a person's answer "yes" (${out.scope})`,
            scope: out.scope,
            channel: out.channel,
          });
          this.approved = true;
          return;
        }
        const channel = 'channel' in out ? out.channel : undefined;
        await told({
          allow: false,
          list: 'person',
          rule: out.reason === 'refused' ? 'a person\'s answer "no"' : `no answer (${out.reason})`,
          scope: 'none',
          ...(channel !== undefined ? { channel } : {}),
        });
        throw askRefusalError('running native Python', out);
      })().finally(() => {
        this.pendingApproval = undefined;
      });
    }
    await this.pendingApproval;
  }

  async run(args: unknown, ctx: { signal?: AbortSignal; principal?: string } = {}): Promise<PythonResult> {
    const { code, stdin } = parseArgs(args);
    await this.approve(ctx.signal, ctx.principal);
    if (ctx.signal?.aborted) throw new TyError('E_ABORTED', 'the python call was cancelled');
    const work = await makeWorkDir(this.opts.workRoot ?? tmpdir(), 'ty-python-');
    try {
      const script = join(work, 'main.py');
      await writeFile(script, code, { mode: 0o600 });
      if (this.opts.sandboxOwner)
        for (const p of [work, script]) await chown(p, this.opts.sandboxOwner.uid, this.opts.sandboxOwner.gid);
      const env: Record<string, string> = {
        PATH: '/usr/local/bin:/usr/bin:/bin',
        HOME: work,
        TMPDIR: work,
        LANG: 'C.UTF-8',
        LC_ALL: 'C.UTF-8',
        PYTHONIOENCODING: 'utf-8',
      };
      const request: PythonSpawnRequest = {
        command: this.opts.python.path,
        args: ['-I', '-B', script],
        env,
        readOnlyPaths: [...this.opts.python.prefixes],
        writablePaths: [work],
        ownedPaths: [work, script],
      };
      const target = this.opts.wrap ? this.opts.wrap(request) : request;
      return await this.spawnAndCollect(target, work, stdin, ctx.signal);
    } finally {
      // Only after the process tree is gone (group killed, stragglers working in the folder killed).
      await removeWorkDir(work);
    }
  }

  private spawnAndCollect(
    target: { command: string; args: string[]; env: Record<string, string>; release?: () => void },
    cwd: string,
    stdin: string,
    signal?: AbortSignal,
  ): Promise<PythonResult> {
    return new Promise<PythonResult>((resolve, reject) => {
      let child;
      try {
        child = spawn(target.command, target.args, {
          cwd,
          env: target.env,
          stdio: ['pipe', 'pipe', 'pipe'],
          detached: true,
        });
      } catch (e) {
        target.release?.();
        throw e;
      }
      if (target.release) {
        child.once('exit', target.release);
        child.once('error', target.release);
      }
      setWorkDirGroup(cwd, child.pid);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let total = 0;
      let failure: TyError | undefined;
      const stop = (e: TyError): void => {
        if (!failure) failure = e;
        killGroup(child.pid);
        // A process outside the group (setsid) may hold the pipes open: stop reading so 'close' comes.
        child.stdout.destroy();
        child.stderr.destroy();
      };
      const timer = setTimeout(
        () => stop(new TyError('E_TIMEOUT', `python ran longer than ${this.timeoutMs} ms and was stopped`)),
        this.timeoutMs,
      );
      const onAbort = (): void => stop(new TyError('E_ABORTED', 'the python call was cancelled'));
      signal?.addEventListener('abort', onAbort, { once: true });
      const collect = (into: Buffer[]) => (d: Buffer) => {
        if (failure) return;
        total += d.length;
        if (total > this.outputBytes)
          return stop(
            new TyError('E_OUTPUT_LIMIT', `python wrote more than ${this.outputBytes} bytes of output and was stopped`),
          );
        into.push(d);
      };
      child.stdout.on('data', collect(out));
      child.stderr.on('data', collect(err));
      child.stdin.on('error', () => undefined);
      child.stdin.end(stdin);
      child.on('error', (e) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(
          new TyError('E_TOOL_FAILED', `python could not be started (${(e as { code?: string }).code ?? 'error'})`),
        );
      });
      // When python exits, whatever it left running in its process group goes too (closing the pipes).
      child.on('exit', () => killGroup(child.pid));
      child.on('close', (exitCode, sig) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        killGroup(child.pid); // anything the script left running in its group
        if (failure) return reject(failure);
        resolve({
          exitCode,
          signal: sig,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
        });
      });
    });
  }
}

/**
 * The function the host registers for the python revision (`registry.registerNative(revision, fn)`),
 * or undefined when no python3 is found (then the tool is not offered).
 */
export function createPythonNative(
  opts: Omit<PythonToolOptions, 'python'> & { python?: PythonInfo },
): ((args: unknown, ctx: unknown) => Promise<unknown>) | undefined {
  const python = opts.python ?? detectPython();
  if (!python) return undefined;
  const tool = new PythonTool({ ...opts, python });
  return (args, ctx) => {
    const signal =
      ctx !== null && typeof ctx === 'object' && (ctx as { signal?: unknown }).signal instanceof AbortSignal
        ? (ctx as { signal: AbortSignal }).signal
        : undefined;
    return tool.run(args, signal ? { signal } : {});
  };
}

/**
 * Offer the python tool on this host: when python3 is found, install its manifest (active when the name
 * `python` is unbound; an existing binding is left alone) and register the native function under its
 * revision. Returns the revision, or undefined when no interpreter is found (the tool is not offered).
 * @throws TyError from registry.install (E_INVALID_MANIFEST, E_STORE)
 */
export async function registerPythonTool(
  registry: {
    install(m: unknown): Promise<{ revision: string; activated: boolean }>;
    registerNative(revision: string, fn: (args: unknown, ctx: unknown) => Promise<unknown>): void;
  },
  opts: Omit<PythonToolOptions, 'python'> & { python?: PythonInfo },
): Promise<{ revision: string; activated: boolean; python: PythonInfo } | undefined> {
  const python = opts.python ?? detectPython();
  if (!python) return undefined;
  const fn = createPythonNative({ ...opts, python });
  if (!fn) return undefined;
  const r = await registry.install(pythonToolManifest());
  registry.registerNative(r.revision, fn);
  return { revision: r.revision, activated: r.activated, python };
}

/**
 * Permission bits `want` (4 r, 2 w, 1 x) of `path` for `who` (owner, else group, else other; ACLs and supplementary
 * groups ignored).
 */
function permits(path: string, who: { uid: number; gid: number }, want: number): boolean {
  try {
    const st = statSync(path);
    if (who.uid === 0) return true;
    const bits = st.uid === who.uid ? (st.mode >> 6) & 7 : st.gid === who.gid ? (st.mode >> 3) & 7 : st.mode & 7;
    return (bits & want) === want;
  } catch {
    return false;
  }
}

/** Every folder from `/` down to (not including) `path` can be searched (x) by `who`. */
function traversable(path: string, who: { uid: number; gid: number }): boolean {
  for (let d = dirname(path); ; d = dirname(d)) {
    if (!permits(d, who, 1)) return false;
    if (d === dirname(d)) return true;
  }
}

/**
 * True when the host uid/gid `who` (the sandbox user, e.g. 65534 when the CLI runs as root) can reach the
 * interpreter: search every folder above it (as written and after resolving symlinks), execute it, and read
 * and search its library prefixes. From the mode bits only; ACLs and supplementary groups are ignored.
 */
export function pythonReachableBy(info: PythonInfo, who: { uid: number; gid: number }): boolean {
  let real: string;
  try {
    real = realpathSync(info.path);
  } catch {
    return false;
  }
  if (!traversable(info.path, who) || !traversable(real, who) || !permits(real, who, 1)) return false;
  return info.prefixes.every((p) => traversable(p, who) && permits(p, who, 5));
}

/** The system interpreter, searched in /usr/bin then /bin only (what a sandbox user can normally reach). */
export const SYSTEM_PYTHON_PATH = '/usr/bin:/bin';

/**
 * Choose the interpreter the sandbox user `who` can run: `found` when reachable, else the system python3
 * (SYSTEM_PYTHON_PATH) when that is reachable, with a `note` saying so.
 * @throws TyError E_SANDBOX_UNAVAILABLE when neither is reachable (says why and what to do).
 */
export function pythonForSandbox(
  found: PythonInfo,
  who: { uid: number; gid: number },
  system: () => PythonInfo | undefined = () => detectPython({ env: { PATH: SYSTEM_PYTHON_PATH } }),
): { python: PythonInfo; note?: string } {
  if (pythonReachableBy(found, who)) return { python: found };
  const sys = system();
  if (sys && sys.path !== found.path && pythonReachableBy(sys, who)) {
    return {
      python: sys,
      note:
        `note: ${found.path} is not reachable by the sandbox's unprivileged user (checked as uid ${who.uid}, ` +
        `which has no more access than the uid leased for each sandbox); the python tool uses the system ` +
        `interpreter ${sys.path} (Python ${sys.version}) instead.`,
    };
  }
  throw new TyError(
    'E_SANDBOX_UNAVAILABLE',
    `python3 at ${found.path} is not reachable by the sandbox user (uid ${who.uid}: a folder above ` +
      `it or its library is not readable by that user), and no reachable system python3 was found ` +
      `in ${SYSTEM_PYTHON_PATH}; install python3 system-wide (e.g. apt-get install python3) or run ` +
      `with --sandbox off to run it without OS isolation`,
  );
}

/** Cheap check, no process started: an executable file named `python3` in an absolute folder of `env.PATH`. */
export function python3OnPath(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d !== '' && isAbsolute(d))
    .some((d) => {
      try {
        const p = join(d, 'python3');
        if (!statSync(p).isFile()) return false;
        accessSync(p, fsc.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}
