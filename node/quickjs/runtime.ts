// Node host SandboxRuntime for `execution.engine: "quickjs"`: each revision a QuickJS sandbox (its own WebAssembly
// instance) inside the sandbox host process of its principal (node/quickjs/sandbox-host.ts); trusted host side.
//
// One process per principal (SandboxSpec.principal), spawned under the same OS wrapper as node sandboxes (bubblewrap
// or Seatbelt, an empty environment, Node's permission model with read access to the bundle and the QuickJS binary
// only, worker threads allowed, no child processes, no network). Sandboxes of different principals never share a
// process. Each sandbox keeps its own protocol channel here (core/exec/channel.ts): every message is checked as a node
// sandbox's is, capabilities are answered for the revision this host started in that sandbox, never for what a message
// claims. The process is killed with its whole process group when this host exits, when it breaks the line protocol,
// and after idleProcessMs without sandboxes.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { availableParallelism, tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { SandboxChannel } from '../../core/exec/channel.js';
import { mapStackText } from '../../core/exec/stack.js';
import { TyError } from '../../core/errors.js';
import type { CallOptions, SandboxInstance, SandboxRuntime, SandboxSpec } from '../../core/exec/runtime.js';
import { fromSandboxHost, type ToSandboxHost } from '../../core/quickjs/control.js';
import { MIN_MEMORY_MB } from '../../core/quickjs/limits.js';
import type { HostMessage } from '../../protocol/wire.js';
import { forgetGroup, killGroup, trackGroup } from '../process/groups.js';
import { flagSafe, packageRoot, permissionFlag } from '../sandbox/engines.js';
import type { SpawnWrapper } from '../sandbox/runtime.js';

/** The bundle the sandbox host process runs (node/quickjs/build.mjs), relative to the package root. */
export const SANDBOX_HOST_BUNDLE = 'dist/quickjs/sandbox-host.cjs';
/** MiB of V8 heap for the sandbox host process's main thread (it only routes lines). */
const HOST_HEAP_MB = 128;
/**
 * MiB of V8 heap for each sandbox thread: the driver's objects (about 40 KiB per sandbox) and the messages in flight;
 * the sandboxes themselves live in their own linear memories, outside it.
 */
export const THREAD_HEAP_MB = 256;
/**
 * QuickJS stack limit per sandbox on the command line, KiB: about 3000 frames of plain recursion. QuickJS's frames are
 * several times larger than V8's, and some native operations work in time quadratic in the depth they reach (a
 * JSON.stringify of a value nested 12 000 deep takes seconds it cannot be interrupted in), so more is not better.
 */
export const DEFAULT_STACK_KB = 512;
/** Stack of each sandbox thread, MiB (see sandbox-host.ts: QuickJS's own stack limit is reached first). */
const THREAD_STACK_MB = 64;
const MIN_LINE_CAP = 26 * 1024 * 1024;
const STDERR_CAP = 64 * 1024;
const OOM_RE = /heap out of memory|Reached heap limit|Fatal (?:JavaScript|process) out of memory|Allocation failed/i;

export interface QuickJsRuntimeOptions {
  /** OS wrapper for each sandbox host process (bubblewrap / Seatbelt); none when absent. */
  wrap?: SpawnWrapper;
  /** Node binary (default: process.execPath). */
  nodePath?: string;
  /** Tool log lines (console.* inside a sandbox), with the revision that wrote them. */
  onLog?: (revision: string, level: 'debug' | 'info' | 'warn' | 'error', text: string) => void;
  /** Threads per process running sandboxes (default min(available parallelism, 4)). */
  workers?: number;
  /** Budget for a sandbox's start and tool load, ms (default 15 000). */
  startTimeoutMs?: number;
  /** A process with no sandbox left exits after this long, ms (default 60 000; 0: when its last sandbox ends). */
  idleProcessMs?: number;
  /** QuickJS stack limit per sandbox, KiB (default 512: about 3000 frames of plain recursion). */
  stackKb?: number;
  /** The bundle to run (default: SANDBOX_HOST_BUNDLE in this package). */
  hostScript?: string;
  /** The QuickJS .wasm file (default: the installed @jitl/quickjs-wasmfile-release-sync's). */
  wasmPath?: string;
}

/** The installed QuickJS binary's path. */
export function quickJsWasmPath(): string {
  const require = createRequire(import.meta.url);
  return require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
}

/** What `tycli sandbox status` and diagnostics show of a runtime's processes. */
export interface QuickJsProcessInfo {
  principal: string;
  pid: number;
  sandboxes: number;
  workers: number;
}

/** One principal's sandbox host process. */
class HostProcess {
  readonly principal: string;
  readonly pid: number;
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #sandboxes = new Map<number, QuickJsInstance>();
  readonly #ready: Promise<void>;
  #stderr = '';
  #dead: TyError | undefined;
  #idle: ReturnType<typeof setTimeout> | undefined;
  #lineCap = MIN_LINE_CAP;
  workers = 0;
  readonly #onGone: (p: HostProcess) => void;
  readonly #idleMs: number;

  constructor(
    principal: string,
    child: ChildProcessWithoutNullStreams,
    onGone: (p: HostProcess) => void,
    idleMs: number,
  ) {
    this.principal = principal;
    this.#child = child;
    this.#onGone = onGone;
    this.#idleMs = idleMs;
    if (child.pid === undefined) throw new TyError('E_SANDBOX_UNAVAILABLE', 'could not start the QuickJS sandbox host');
    this.pid = child.pid;
    trackGroup(this.pid);
    let resolveReady!: () => void;
    let rejectReady!: (e: TyError) => void;
    this.#ready = new Promise<void>((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    this.#ready.catch(() => {});
    this.#readyHooks = { resolve: resolveReady, reject: rejectReady };
    this.#readLines();
    child.stderr.on('data', (c: Buffer) => {
      if (this.#stderr.length < STDERR_CAP)
        this.#stderr += c.toString('utf8').slice(0, STDERR_CAP - this.#stderr.length);
    });
    child.stdin.on('error', () =>
      this.#fail(new TyError('E_SANDBOX_FAILED', 'the QuickJS sandbox host stopped reading')),
    );
    child.once('exit', (code, signal) => {
      forgetGroup(this.pid);
      killGroup(this.pid);
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const oom = OOM_RE.test(this.#stderr);
      this.#fail(
        signal === 'SIGXCPU'
          ? new TyError('E_TIMEOUT', 'CPU time limit reached: the QuickJS sandbox host used up its CPU seconds')
          : new TyError('E_SANDBOX_FAILED', `the QuickJS sandbox host ${oom ? 'ran out of memory and ' : ''}${how}`),
      );
    });
    child.once('error', () =>
      this.#fail(new TyError('E_SANDBOX_UNAVAILABLE', 'could not start the QuickJS sandbox host')),
    );
  }
  #readyHooks: { resolve: () => void; reject: (e: TyError) => void };

  get alive(): boolean {
    return this.#dead === undefined;
  }
  get size(): number {
    return this.#sandboxes.size;
  }
  /** Resolves once the process said hello. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** Write one line (a protocol message of `sid`, or a control message). */
  write(text: string): void {
    if (this.#dead) return;
    this.#child.stdin.write(text);
  }
  writeParts(parts: readonly string[]): void {
    if (this.#dead) return;
    const s = this.#child.stdin;
    s.cork();
    try {
      for (const p of parts) s.write(p);
    } finally {
      s.uncork();
    }
  }
  control(m: ToSandboxHost): void {
    this.write(`!${JSON.stringify(m)}\n`);
  }
  /** The results of sandboxes here may be this large (6 x the largest output cap asked for, at least 26 MiB). */
  allowLine(outputBytes: number): void {
    this.#lineCap = Math.max(this.#lineCap, outputBytes * 6 + 64 * 1024);
  }

  add(sid: number, inst: QuickJsInstance): void {
    this.#sandboxes.set(sid, inst);
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#idle = undefined;
  }
  remove(sid: number): void {
    if (!this.#sandboxes.delete(sid) || this.#sandboxes.size > 0 || this.#dead) return;
    if (this.#idleMs === 0) return void this.kill();
    this.#idle = setTimeout(() => {
      if (this.#sandboxes.size === 0) this.kill();
    }, this.#idleMs);
    this.#idle.unref();
  }

  /** Kill the whole process group. */
  kill(): void {
    this.#fail(new TyError('E_SANDBOX_FAILED', 'the QuickJS sandbox host was stopped'));
  }

  #fail(reason: TyError): void {
    if (this.#dead) return;
    this.#dead = reason;
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#readyHooks.reject(reason);
    killGroup(this.pid);
    for (const s of [...this.#sandboxes.values()]) s.channel.fail(reason);
    this.#sandboxes.clear();
    this.#onGone(this);
  }

  /** stdout: `!<json>` control lines and `<sid> <json>` protocol lines; each line capped. */
  #readLines(): void {
    let chunks: Buffer[] = [];
    let pending = 0;
    let skipping = false;
    const onLine = (line: Buffer) => {
      if (line.length === 0) return;
      if (line[0] === 33) return this.#onControl(line.subarray(1).toString('utf8'));
      const sp = line.indexOf(32);
      const sid = sp > 0 && sp < 12 ? Number(line.subarray(0, sp).toString('latin1')) : Number.NaN;
      if (!Number.isSafeInteger(sid))
        return this.#fail(new TyError('E_PROTOCOL', 'the QuickJS sandbox host sent a malformed line'));
      const inst = this.#sandboxes.get(sid);
      if (inst) inst.channel.receive(line.subarray(sp + 1).toString('utf8'));
    };
    const overflow = (head: Buffer) => {
      const sp = head.indexOf(32);
      const inst = this.#sandboxes.get(Number(head.subarray(0, Math.max(sp, 0)).toString('latin1')));
      inst?.channel.fail(
        new TyError('E_OUTPUT_LIMIT', `sandbox sent a message larger than ${this.#lineCap} bytes; sandbox destroyed`),
      );
    };
    this.#child.stdout.on('data', (chunk: Buffer) => {
      if (this.#dead) return;
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(10, start);
        if (nl === -1) break;
        const part = chunk.subarray(start, nl);
        start = nl + 1;
        if (skipping) {
          skipping = false;
          continue;
        }
        let line: Buffer;
        if (chunks.length === 0) line = part;
        else {
          chunks.push(part);
          line = Buffer.concat(chunks, pending + part.length);
          chunks = [];
          pending = 0;
        }
        if (line.length > this.#lineCap) {
          overflow(line);
          continue;
        }
        onLine(line);
        if (this.#dead) return;
      }
      if (start < chunk.length && !skipping) {
        const rest = chunk.subarray(start);
        chunks.push(rest);
        pending += rest.length;
        if (pending > this.#lineCap) {
          overflow(chunks[0]!);
          chunks = [];
          pending = 0;
          skipping = true;
        }
      }
    });
    this.#child.stdout.once('end', () =>
      this.#fail(new TyError('E_SANDBOX_FAILED', 'the QuickJS sandbox host closed its output')),
    );
  }

  #onControl(text: string): void {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      v = undefined;
    }
    const m = fromSandboxHost(v);
    if (!m) return this.#fail(new TyError('E_PROTOCOL', 'the QuickJS sandbox host sent a malformed control message'));
    if (m.op === 'hello') {
      this.workers = m.workers;
      this.#readyHooks.resolve();
      return;
    }
    const inst = this.#sandboxes.get(m.sid);
    if (!inst) return;
    if (m.op === 'held') {
      inst.held = m.bytes;
      return;
    }
    inst.channel.fail(new TyError(m.code, m.message, m.name !== undefined ? { name: m.name } : undefined));
  }
}

/** A QuickJS sandbox of one revision, inside its principal's process. */
export class QuickJsInstance implements SandboxInstance {
  readonly revision: string;
  readonly sid: number;
  readonly channel: SandboxChannel;
  /** What the sandbox may hold, bytes, as its sandbox host last reported (`held` control messages). */
  held = 0;
  readonly #proc: HostProcess;

  /** @internal use QuickJsSandboxRuntime.start */
  constructor(
    revision: string,
    sid: number,
    proc: HostProcess,
    onLog?: (level: 'debug' | 'info' | 'warn' | 'error', text: string) => void,
  ) {
    this.revision = revision;
    this.sid = sid;
    this.#proc = proc;
    const prefix = `${sid} `;
    this.channel = new SandboxChannel(
      {
        send: (msg: HostMessage) => {
          let line: string;
          try {
            line = JSON.stringify(msg);
          } catch {
            throw new TyError('E_INVALID_ARGS', 'arguments are not JSON data');
          }
          proc.write(`${prefix}${line}\n`);
        },
        sendText: (json: string) => proc.write(`${prefix}${json}\n`),
        sendParts: (parts: readonly string[]) => {
          const last = parts.length - 1;
          const out = [prefix + parts[0]!];
          for (let i = 1; i < last; i++) out.push(parts[i]!);
          if (last > 0) out.push(parts[last] + '\n');
          else out[0] += '\n';
          proc.writeParts(out);
        },
        close: () => {
          proc.control({ op: 'destroy', sid });
          proc.remove(sid);
        },
      },
      onLog ? { onLog } : {},
    );
  }
  get alive(): boolean {
    return this.channel.alive;
  }
  /** Which principal's process holds this sandbox, and that process's pid. */
  get process(): { principal: string; pid: number } {
    return { principal: this.#proc.principal, pid: this.#proc.pid };
  }
  /** MiB the sandbox may hold (SandboxInstance.heldMb): the last `held` report, 1 MiB before any. */
  heldMb(): number {
    return this.held > 0 ? this.held / 1048576 : 1;
  }
  call(args: unknown, opts: CallOptions): Promise<unknown> {
    if (!this.channel.alive) return Promise.reject(this.channel.closedReason);
    this.#proc.allowLine(opts.limits.outputBytes);
    this.#proc.control({ op: 'deadline', sid: this.sid, ms: Math.max(1, Math.floor(opts.limits.timeoutMs)) });
    return this.channel.call(args, opts);
  }
  async destroy(reason: string): Promise<void> {
    this.channel.fail(new TyError('E_SANDBOX_FAILED', `sandbox destroyed: ${reason.slice(0, 200)}`));
  }
}

/**
 * Starts QuickJS sandboxes, one sandbox host process per principal (see the file comment). `perPrincipal` tells the
 * pool (core/exec/pool.ts) to keep a revision's sandboxes apart per principal.
 */
export class QuickJsSandboxRuntime implements SandboxRuntime {
  readonly name = 'quickjs';
  readonly perPrincipal = true;
  readonly sharesProcess = true;
  readonly #o: QuickJsRuntimeOptions;
  readonly #procs = new Map<string, HostProcess>();
  #nextSid = 1;

  constructor(opts: QuickJsRuntimeOptions = {}) {
    this.#o = opts;
  }

  /** Threads each process runs sandboxes on (QuickJsRuntimeOptions.workers, default min(parallelism, 4)). */
  get threads(): number {
    return this.#o.workers ?? Math.max(1, Math.min(4, availableParallelism()));
  }

  /** The command line of a principal's process, before the OS wrapper (tests and diagnostics). */
  command(): {
    command: string;
    args: string[];
    env: Record<string, string>;
    readOnlyPaths: string[];
    writablePaths: string[];
  } {
    const node = this.#o.nodePath ?? process.execPath;
    const script = this.#o.hostScript ?? join(packageRoot(), SANDBOX_HOST_BUNDLE);
    const wasm = this.#o.wasmPath ?? quickJsWasmPath();
    if (!existsSync(script))
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        `the QuickJS sandbox host ${SANDBOX_HOST_BUNDLE} is missing: run npm run build (or node node/quickjs/build.mjs)`,
      );
    if (![script, wasm].every(flagSafe))
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        'the package is installed under a path the engine permission flags cannot express (contains "," or "*")',
      );
    const workers = this.threads;
    return {
      command: node,
      args: [
        permissionFlag(node),
        `--allow-fs-read=${script}`,
        `--allow-fs-read=${wasm}`,
        '--allow-worker',
        '--no-warnings',
        `--max-old-space-size=${HOST_HEAP_MB}`,
        script,
        `--wasm=${wasm}`,
        `--workers=${workers}`,
        `--stack-mb=${THREAD_STACK_MB}`,
        `--thread-heap-mb=${THREAD_HEAP_MB}`,
      ],
      env: {},
      readOnlyPaths: [node, script, wasm],
      writablePaths: [],
    };
  }

  /** The live processes (one per principal). */
  processes(): QuickJsProcessInfo[] {
    return [...this.#procs.values()].map((p) => ({
      principal: p.principal,
      pid: p.pid,
      sandboxes: p.size,
      workers: p.workers,
    }));
  }

  #process(principal: string): HostProcess {
    const have = this.#procs.get(principal);
    if (have?.alive) return have;
    const base = this.command();
    const cmd = this.#o.wrap ? this.#o.wrap({ ...base, spawnerSetsIds: true }) : base;
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(cmd.command, cmd.args, {
        env: cmd.env,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        cwd: tmpdir(),
        windowsHide: true,
        ...('spawnAs' in cmd && cmd.spawnAs ? { uid: cmd.spawnAs.uid, gid: cmd.spawnAs.gid } : {}),
      });
    } catch {
      ('release' in cmd ? cmd.release : undefined)?.();
      throw new TyError('E_SANDBOX_UNAVAILABLE', 'could not start the QuickJS sandbox host');
    }
    const release = 'release' in cmd ? cmd.release : undefined;
    if (release) {
      child.once('exit', release);
      child.once('error', release);
    }
    if (child.pid === undefined) throw new TyError('E_SANDBOX_UNAVAILABLE', 'could not start the QuickJS sandbox host');
    const p = new HostProcess(
      principal,
      child,
      (gone) => {
        if (this.#procs.get(gone.principal) === gone) this.#procs.delete(gone.principal);
      },
      this.#o.idleProcessMs ?? 60_000,
    );
    this.#procs.set(principal, p);
    return p;
  }

  /** Start the principal's process ahead of its first sandbox (no tool code, no arguments reach it). Never throws. */
  prestart(spec: SandboxSpec): void {
    try {
      this.#process(spec.principal ?? 'default');
    } catch {
      /* start() reports it */
    }
  }

  /**
   * Create the revision's sandbox in its principal's process and load its source.
   * @throws TyError E_SANDBOX_UNAVAILABLE (not JavaScript, folder grants, bundle missing), E_TOOL_FAILED (the module
   *   failed to load), E_TIMEOUT, E_ABORTED, E_SANDBOX_FAILED, E_MEMORY_LIMIT, E_PROTOCOL.
   */
  async start(spec: SandboxSpec, signal?: AbortSignal): Promise<QuickJsInstance> {
    const exec = spec.manifest.execution;
    if (exec.kind !== 'sandboxed-code' || exec.runtime !== 'javascript')
      throw new TyError('E_SANDBOX_UNAVAILABLE', 'the quickjs engine runs JavaScript tools only');
    if ((spec.folders?.length ?? 0) > 0)
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        'the quickjs engine has no file system: folder grants need the node or deno engine',
      );
    if (signal?.aborted) throw new TyError('E_ABORTED', 'sandbox start aborted');
    const proc = this.#process(spec.principal ?? 'default');
    const budget = this.#o.startTimeoutMs ?? 15_000;
    const onLog = this.#o.onLog;
    const sid = this.#nextSid++;
    const inst = new QuickJsInstance(
      spec.revision,
      sid,
      proc,
      onLog ? (level, text) => onLog(spec.revision, level, mapStackText(spec.manifest, text)) : undefined,
    );
    proc.add(sid, inst);
    try {
      await raceAbort(proc.ready(), signal, budget);
      const memoryMb = Math.max(MIN_MEMORY_MB, Math.floor(spec.limits.memoryMb));
      proc.control({ op: 'create', sid, memoryMb, stackKb: this.#o.stackKb ?? DEFAULT_STACK_KB });
      proc.control({ op: 'deadline', sid, ms: budget });
      await inst.channel.load('javascript', exec.source, budget, signal);
    } catch (e) {
      await inst.destroy('start failed');
      throw e instanceof TyError ? e : new TyError('E_SANDBOX_FAILED', 'the QuickJS sandbox did not start');
    }
    return inst;
  }

  /** Stop every process (their sandboxes fail with E_SANDBOX_FAILED). */
  close(): void {
    for (const p of [...this.#procs.values()]) p.kill();
  }
}

/** Wait for `p`, failing on abort or after `ms`. */
function raceAbort(p: Promise<void>, signal: AbortSignal | undefined, ms: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const t = setTimeout(
      () => reject(new TyError('E_TIMEOUT', `the QuickJS sandbox host did not start within ${ms} ms`)),
      ms,
    );
    const onAbort = () => reject(new TyError('E_ABORTED', 'sandbox start aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    p.then(
      () => resolve(),
      (e: unknown) => reject(e),
    ).finally(() => {
      clearTimeout(t);
      signal?.removeEventListener('abort', onAbort);
    });
  });
}
