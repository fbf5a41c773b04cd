// Node host SandboxRuntime: tool JavaScript in a Node (permission model) or Deno (no permissions) subprocess; trusted
// host side.
//
// What the engine's own permission model does NOT cover, and the OS wrapper (node/os-sandbox, via `wrap`) must:
// - Node 20-24 `--permission` / `--experimental-permission` restricts the file system, child processes, workers,
//   addons, WASI and the inspector only. It does NOT restrict the network (tool code can `import('node:net')`
//   and connect, including to Unix sockets), nor signals to other processes (the runner stubs process.kill and
//   os.setPriority as defence in depth only), nor reading the process's own environment (so we pass an EMPTY
//   one), nor memory outside the V8 heap (ArrayBuffers are not capped by --max-old-space-size).
//   Without an OS wrapper, a Node sandbox can reach the network.
// - Deno with no --allow-* flags denies network, file system, environment, subprocesses, signals and FFI. Its
//   DENO_DIR is a path no one can create (DENO_NO_CACHE_DIR): the deno binary keeps its caches in memory and writes
//   nothing (a writable one cost a fresh sandbox about a dozen fsyncs of SQLite cache files).
// - Both run as the host's user. Neither bounds CPU (we kill at the time limit). Sandboxes are SIGKILLed as a
//   process group on destroy, timeout, abort and host `exit`; an idle sandbox also exits when its stdin closes
//   (host died), but a busy-looping one outlives a host killed by a signal unless the OS wrapper uses
//   --die-with-parent.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mapStackText } from '../../core/exec/stack.js';
import { constants as osConstants, tmpdir } from 'node:os';
import { dirname, isAbsolute } from 'node:path';
import type { HostMessage } from '../../protocol/wire.js';
import { SandboxChannel } from '../../core/exec/channel.js';
import { TyError } from '../../core/errors.js';
import type { CallOptions, SandboxInstance, SandboxRuntime, SandboxSpec } from '../../core/exec/runtime.js';
import {
  PYTHON_SANDBOX_NEEDS,
  pythonSandboxPlan,
  type PyodideAssets,
  type PythonPackageFile,
} from '../python/sandbox.js';
import {
  packageRoot,
  runnerPath,
  runnerFiles,
  flagSafe,
  permissionFlag,
  resolveDeno,
  DENO_NO_CACHE_DIR,
  sweepStaleDenoDirs,
  semiSpaceMb,
  nodeRunnerV8Flags,
} from './engines.js';
import { forgetGroup, killGroup, trackGroup } from '../process/groups.js';
import { treeDataMb } from '../process/memory.js';
export {
  packageRoot,
  runnerPath,
  runnerFiles,
  rememberPermissionFlag,
  permissionFlag,
  resolveDeno,
  DENO_NO_CACHE_DIR,
  sweepStaleDenoDirs,
  semiSpaceMb,
  nodeRunnerV8Flags,
} from './engines.js';

/**
 * What the OS wrapper receives and returns: the command to run instead (e.g. `bwrap ... -- node ...`). This runtime
 * asks with `spawnerSetsIds` and spawns the returned command as `spawnAs` when the wrapper returns it (a root CLI's
 * per-sandbox uid, set by spawn itself instead of a setpriv exec: node/os-sandbox/bwrap.ts).
 */
export type SpawnWrapper = (s: {
  command: string;
  args: string[];
  env: Record<string, string>;
  readOnlyPaths: string[];
  writablePaths: string[];
  spawnerSetsIds?: boolean;
}) => {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** The uid/gid to spawn `command` as (the command line itself does not drop privileges then). */
  spawnAs?: { uid: number; gid: number };
  /** Called once the process has exited or could not be spawned (e.g. releases the sandbox's leased uid). */
  release?: () => void;
};

/**
 * child_process.spawn options of a sandbox command: its exact environment, stdio pipes, own process group, and its
 * uid/gid when the wrapper asks.
 */
function spawnOptions(cmd: ReturnType<SpawnWrapper>, cwd: string) {
  return {
    env: cmd.env,
    stdio: ['pipe', 'pipe', 'pipe'] as ['pipe', 'pipe', 'pipe'],
    detached: true,
    cwd,
    windowsHide: true,
    ...(cmd.spawnAs ? { uid: cmd.spawnAs.uid, gid: cmd.spawnAs.gid } : {}),
  };
}

export interface NodeSandboxRuntimeOptions {
  engine: 'node' | 'deno';
  /** OS-level wrapper (bubblewrap / Seatbelt); identity when absent. */
  wrap?: SpawnWrapper;
  /** Node binary (default: process.execPath). */
  nodePath?: string;
  /** Deno binary (default: the `deno` npm package's binary). */
  denoPath?: string;
  /** Tool log lines (console.* inside the sandbox). */
  onLog?: (revision: string, level: 'debug' | 'info' | 'warn' | 'error', text: string) => void;
  /** Budget for spawn + load, ms (default 15 000; Python revisions PYTHON_SANDBOX_NEEDS.startTimeoutMs). */
  startTimeoutMs?: number;
  /**
   * Pyodide files for Python revisions (default: the installed `pyodide` package checked against
   * core/pyodide-manifest.json).
   */
  pyodide?: PyodideAssets;
  /** The wheel files of a Python revision that declares `python.packages` (default: none can be found). */
  pythonPackages?: (
    revision: string,
    packages: readonly { file: string; sha256: string }[],
  ) => Promise<PythonPackageFile[]>;
  /**
   * Told when a sandbox for `revision` starts loading a runtime that takes long (`python`: Pyodide) and when it is
   * done.
   */
  onStartProgress?: (e: { revision: string; runtime: 'python'; phase: 'start' | 'done' | 'failed' }) => void;
}

const STDERR_CAP = 64 * 1024;
/**
 * What a runner writes on stderr before it ends itself because tool code closed or replaced its channel
 * (node/runner/*).
 */
const CHANNEL_LOST_MARK = 'tysandbox: the sandbox channel was closed or replaced';
/** node/runner/sandbox-runner.cjs: tool code called process.exit(N); the runner then SIGKILLs itself at once. */
const TOOL_EXIT_RE = /tysandbox: the tool ended its sandbox with exit code (\d+)/;
/** After a sandbox's stdout ends or its stdin breaks, how long its exit status may take to classify the death, ms. */
const CHANNEL_GRACE_MS = 250;
/** SIGXCPU's number on Linux and macOS (os.constants.signals.SIGXCPU). */
const SIGXCPU = osConstants.signals.SIGXCPU ?? 24;
const MIN_LINE_CAP = 26 * 1024 * 1024; // a fetch request body (24 MiB base64) plus headers
const OOM_RE =
  /heap out of memory|Reached heap limit|Fatal JavaScript out of memory|Fatal process out of memory|Allocation failed/i;

let swept = false;
/** Node's native UTF-8 byte count (the result cap's measure). */
const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** A sandbox process started ahead of its call (NodeSandboxRuntime.prestart): the unwrapped command line it runs. */
interface Spare {
  key: string;
  child: ChildProcessWithoutNullStreams;
  pid: number;
  /** Settles once the process has exited (or could not be spawned). */
  exited: Promise<void>;
}

/** SIGKILL a spare's process group and wait until it has exited and been reaped (at most 5 s); its pipes closed. */
async function reap(s: Spare): Promise<void> {
  killGroup(s.pid);
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([s.exited, new Promise<void>((r) => (timer = setTimeout(r, 5000)))]);
  clearTimeout(timer);
  forgetGroup(s.pid);
  for (const st of [s.child.stdin, s.child.stdout, s.child.stderr]) st.destroy();
}

/** A live subprocess sandbox for one revision. `pid` is the process-group leader. */
export class NodeSandboxInstance implements SandboxInstance {
  readonly revision: string;
  readonly pid: number;
  readonly engine: 'node' | 'deno';
  #channel: SandboxChannel;
  #stderr = '';
  #exited: Promise<void>;
  #lineCap = MIN_LINE_CAP;
  #wrapped: boolean;
  #exitSeen = false;

  /** @internal use NodeSandboxRuntime.start */
  constructor(
    revision: string,
    engine: 'node' | 'deno',
    child: ChildProcessWithoutNullStreams,
    onLog?: NodeSandboxRuntimeOptions['onLog'],
    wrapped = false,
  ) {
    this.revision = revision;
    this.#wrapped = wrapped;
    this.engine = engine;
    if (child.pid === undefined) throw new TyError('E_SANDBOX_UNAVAILABLE', `could not start the ${engine} sandbox`);
    this.pid = child.pid;
    trackGroup(this.pid);
    this.#channel = new SandboxChannel(
      {
        send: (msg: HostMessage) => {
          let line: string;
          try {
            line = JSON.stringify(msg);
          } catch {
            throw new TyError('E_INVALID_ARGS', 'arguments are not JSON data');
          }
          child.stdin.write(line + '\n');
        },
        // JSON text from the host itself (a call's canonical arguments): one line, as is
        sendText: (json: string) => {
          child.stdin.write(json + '\n');
        },
        // One message in pieces (a call whose arguments hold a long string): written corked, so they leave in one
        // writev whose UTF-8 bytes are encoded once, piece by piece, straight from the strings (no joined copy of the
        // text; faster here than Buffer.from of the long piece, test/bench/warm.bench.mjs).
        sendParts: (parts: readonly string[]) => {
          const s = child.stdin;
          s.cork();
          try {
            const last = parts.length - 1;
            for (let i = 0; i < last; i++) s.write(parts[i]!);
            s.write(parts[last] + '\n');
          } finally {
            s.uncork();
          }
        },
        close: () => this.#kill(),
      },
      {
        ...(onLog ? { onLog: (level, text) => onLog(revision, level, text) } : {}),
        onClosed: () => this.#kill(),
        byteLength: utf8Bytes,
      },
    );
    // stdout: NDJSON, one message per line, each line capped (E_OUTPUT_LIMIT, sandbox killed; never truncated).
    let chunks: Buffer[] = [];
    let pending = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      if (!this.#channel.alive) {
        chunks = [];
        return;
      }
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(10, start);
        if (nl === -1) break;
        const part = chunk.subarray(start, nl);
        let line: Buffer;
        if (chunks.length === 0) line = part;
        else {
          chunks.push(part);
          line = Buffer.concat(chunks, pending + part.length);
          chunks = [];
          pending = 0;
        }
        if (line.length > this.#lineCap) return this.#overflow(this.#lineCap);
        this.#channel.receive(line.toString('utf8'));
        if (!this.#channel.alive) return;
        start = nl + 1;
      }
      if (start < chunk.length) {
        const rest = chunk.subarray(start);
        chunks.push(rest);
        pending += rest.length;
        if (pending > this.#lineCap) this.#overflow(this.#lineCap);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (this.#stderr.length < STDERR_CAP)
        this.#stderr += chunk.toString('utf8').slice(0, STDERR_CAP - this.#stderr.length);
    });
    // A sandbox that closes its stdout (or whose stdin breaks) while it lives can no longer answer: fail the
    // call at once (E_SANDBOX_FAILED), not at the call timeout. A short grace lets a dying process's exit
    // status classify the death instead (heap limit, CPU limit).
    const broken = (what: string) => {
      if (!this.#channel.alive || this.#exitSeen) return;
      setTimeout(() => {
        if (this.#channel.alive && !this.#exitSeen)
          this.#channel.fail(new TyError('E_SANDBOX_FAILED', `the ${engine} sandbox ${what}; sandbox destroyed`));
      }, CHANNEL_GRACE_MS).unref();
    };
    child.stdout.once('end', () => broken('closed its output channel'));
    child.stdin.on('error', () => broken('stopped reading its input channel'));
    child.stdin.once('close', () => broken('closed its input channel'));
    this.#exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        this.#exitSeen = true;
        forgetGroup(this.pid);
        killGroup(this.pid); // anything the leader left behind in its group
        // stdout/stderr may still be draining: read them to the end before classifying the death.
        let done = false;
        const classify = () => {
          if (done) return;
          done = true;
          this.#channel.fail(this.#deathReason(code, signal));
          resolve();
        };
        let open = 0;
        for (const s of [child.stdout, child.stderr]) {
          if (s.closed) continue;
          open++;
          s.once('close', () => {
            if (--open === 0) classify();
          });
        }
        if (open === 0) classify();
        else setTimeout(classify, 500).unref();
      });
      child.once('error', () => {
        this.#channel.fail(new TyError('E_SANDBOX_UNAVAILABLE', `could not start the ${engine} sandbox`));
        resolve();
      });
    });
  }

  get alive(): boolean {
    return this.#channel.alive;
  }
  /** Captured stderr of the sandbox (first 64 KiB), for diagnostics. */
  get stderr(): string {
    return this.#stderr;
  }
  /** @internal */
  get channel(): SandboxChannel {
    return this.#channel;
  }

  /** @throws TyError as SandboxInstance.call. */
  call(args: unknown, opts: CallOptions): Promise<unknown> {
    // A JSON string inside a JSON line can grow up to 6x (\u00XX escapes); the exact check happens in the channel.
    this.#lineCap = Math.max(MIN_LINE_CAP, opts.limits.outputBytes * 6 + 64 * 1024);
    return this.#channel.call(args, opts);
  }

  async destroy(reason: string): Promise<void> {
    this.#channel.fail(new TyError('E_SANDBOX_FAILED', `sandbox destroyed: ${reason}`));
    await this.#exited;
  }

  /** Wait until the process has exited (after destroy or death). */
  get exited(): Promise<void> {
    return this.#exited;
  }

  /**
   * The private writable memory of the sandbox's processes (VmData of /proc/PID/status, what RLIMIT_DATA bounds:
   * heap, ArrayBuffers, stacks), MiB, summed over the process and its descendants (the OS wrapper's and the engine's);
   * undefined when /proc cannot tell (not Linux, the process gone). A few reads of /proc: for the pool's check of an
   * idle sandbox (core/exec/pool.ts), never on a call's path.
   */
  memoryMb(): number | undefined {
    return this.alive ? treeDataMb(this.pid) : undefined;
  }

  #overflow(cap: number): void {
    this.#channel.fail(
      new TyError('E_OUTPUT_LIMIT', `sandbox sent a message larger than ${cap} bytes; sandbox destroyed`),
    );
  }
  #kill(): void {
    killGroup(this.pid);
  }
  #deathReason(code: number | null, signal: NodeJS.Signals | null): TyError {
    if (OOM_RE.test(this.#stderr))
      return new TyError('E_MEMORY_LIMIT', `the ${this.engine} sandbox ran out of its heap limit and was killed`);
    // RLIMIT_CPU (node/os-sandbox/limits.ts): the kernel sends SIGXCPU at the soft limit, SIGKILL at the hard one.
    // A direct child shows the signal itself; behind a wrapper (bwrap reports a child's death by signal N as exit
    // status 128+N) the status is read that way (tool code calling exit(152) there is reported the same).
    if (signal === 'SIGXCPU' || (this.#wrapped && code === 128 + SIGXCPU)) {
      return new TyError(
        'E_TIMEOUT',
        `CPU time limit reached: the ${this.engine} sandbox used up its CPU seconds and was killed`,
      );
    }
    if (this.#stderr.includes(CHANNEL_LOST_MARK))
      return new TyError(
        'E_SANDBOX_FAILED',
        `the ${this.engine} sandbox closed or replaced its channel (stdin/stdout); sandbox destroyed`,
      );
    const toolExit = TOOL_EXIT_RE.exec(this.#stderr);
    if (toolExit) return new TyError('E_SANDBOX_FAILED', `the ${this.engine} sandbox exited with code ${toolExit[1]}`);
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    return new TyError('E_SANDBOX_FAILED', `the ${this.engine} sandbox ${how}`);
  }
}

/**
 * Starts tool JavaScript in a subprocess: Node with the permission model (read access to the runner files only,
 * no child processes / workers / addons, empty environment, V8 heap cap) or Deno with no permissions at all.
 * One process group per sandbox, SIGKILLed as a group on destroy, timeout, abort and host exit.
 */
export class NodeSandboxRuntime implements SandboxRuntime {
  readonly name: string;
  readonly #opts: NodeSandboxRuntimeOptions;
  /** A process started ahead of its first call (prestart): the command line it runs, and its exit. */
  #spare: Spare | undefined;
  /** The latest discarded spare's kill-and-reap. */
  #reaping: Promise<void> | undefined;

  constructor(opts: NodeSandboxRuntimeOptions) {
    if (opts.engine !== 'node' && opts.engine !== 'deno')
      throw new TyError('E_USAGE', `unknown engine ${String(opts.engine)}`);
    this.#opts = opts;
    this.name = opts.engine;
  }

  /** Build the command line (before wrapping). Exposed for the OS-wrapper tests and diagnostics. */
  command(
    spec: SandboxSpec,
    packages?: PythonPackageFile[],
  ): {
    command: string;
    args: string[];
    env: Record<string, string>;
    readOnlyPaths: string[];
    writablePaths: string[];
  } {
    const runner = runnerPath(this.#opts.engine);
    const exec = spec.manifest.execution;
    const isPython = exec.kind === 'sandboxed-code' && exec.runtime === 'python';
    const files = runnerFiles(this.#opts.engine, { codeCache: !isPython });
    if (!files.every(flagSafe))
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        'the package is installed under a path the engine permission flags cannot express (contains "," or "*")',
      );
    for (const f of spec.folders ?? []) {
      if (!isAbsolute(f.path) || !flagSafe(f.path)) {
        throw new TyError(
          'E_USAGE',
          'a granted folder must be an absolute path without ",", "*" or control characters (the engine permission flags split on ",")',
        );
      }
    }
    // Python (Pyodide): the verified asset files, read-only; code generation from strings off (node/python/sandbox.ts).
    // (No code cache: it was made under a JavaScript sandbox's V8 flags, which V8 checks.)
    const py =
      isPython && exec.kind === 'sandboxed-code'
        ? pythonSandboxPlan(this.#opts.pyodide ?? packageRoot(), dirname(runner), {
            retainState: exec.retainState === true,
            memoryMb: spec.limits.memoryMb,
            ...(packages ? { packages } : {}),
          })
        : undefined;
    if (py) {
      if (![...py.guestFiles, ...py.readFiles].every(flagSafe))
        throw new TyError(
          'E_SANDBOX_UNAVAILABLE',
          'the pyodide package is installed under a path the engine permission flags cannot express (contains "," or "*")',
        );
      files.push(...py.guestFiles, ...py.readFiles);
    }
    const mem = Math.max(py ? PYTHON_SANDBOX_NEEDS.minHeapMb : 16, Math.floor(spec.limits.memoryMb));
    const readFolders = (spec.folders ?? []).map((f) => f.path);
    const writeFolders = (spec.folders ?? []).filter((f) => f.access === 'write').map((f) => f.path);
    if (this.#opts.engine === 'node') {
      const node = this.#opts.nodePath ?? process.execPath;
      const args = [permissionFlag(node), ...files.map((f) => `--allow-fs-read=${f}`)];
      for (const p of readFolders) args.push(`--allow-fs-read=${p}`);
      for (const p of writeFolders) args.push(`--allow-fs-write=${p}`);
      args.push('--no-warnings', `--max-old-space-size=${mem}`);
      if (!py) args.push(...nodeRunnerV8Flags(mem));
      if (py) args.push('--disallow-code-generation-from-strings');
      args.push(runner);
      if (py) args.push(py.runnerArg);
      return {
        command: node,
        args,
        env: {},
        readOnlyPaths: [node, ...files, ...readFolders.filter((p) => !writeFolders.includes(p))],
        writablePaths: writeFolders,
      };
    }
    const deno = this.#opts.denoPath ?? resolveDeno();
    if (!deno)
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        'the deno binary was not found (install the `deno` npm package or pass denoPath)',
      );
    const args = [
      'run',
      '--no-prompt',
      '--no-config',
      '--no-lock',
      '--no-npm',
      '--no-remote',
      '--no-code-cache',
      '--quiet',
      `--v8-flags=--max-old-space-size=${mem}${py ? ',--disallow-code-generation-from-strings' : `,--max-semi-space-size=${semiSpaceMb(mem)}`}`,
    ];
    const denoReads = [...(py ? py.readFiles : []), ...readFolders];
    if (denoReads.length) args.push(`--allow-read=${denoReads.join(',')}`);
    if (writeFolders.length) args.push(`--allow-write=${writeFolders.join(',')}`);
    args.push(runner);
    if (py) args.push(py.runnerArg);
    const env: Record<string, string> = { NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1', DENO_DIR: DENO_NO_CACHE_DIR };
    return {
      command: deno,
      args,
      env,
      readOnlyPaths: [deno, ...files, ...readFolders.filter((p) => !writeFolders.includes(p))],
      writablePaths: writeFolders,
    };
  }

  /** Spawn the (wrapped) sandbox command. @throws TyError E_SANDBOX_UNAVAILABLE when it cannot start. */
  async #spawn(cmd: ReturnType<SpawnWrapper>): Promise<ChildProcessWithoutNullStreams> {
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(cmd.command, cmd.args, spawnOptions(cmd, tmpdir()));
    } catch {
      cmd.release?.();
      throw new TyError('E_SANDBOX_UNAVAILABLE', `could not start the ${this.#opts.engine} sandbox`);
    }
    if (cmd.release) {
      const release = cmd.release;
      child.once('exit', release);
      child.once('error', release);
    }
    if (child.pid === undefined) {
      // spawn failed asynchronously (ENOENT / EACCES): wait for the error event, then report.
      await new Promise<void>((r) => child.once('error', () => r()));
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        `could not start the ${this.#opts.engine} sandbox (${cmd.command} not runnable)`,
      );
    }
    return child;
  }

  /**
   * Start the sandbox process for `spec` ahead of its call, so that it boots while the host is still being assembled
   * and the call resolved, validated, gated and its intent audited. The process is the bare runner (its two project
   * files, the limits' flags, an empty environment) waiting for its first message: no tool source, no arguments, no
   * settings, no secrets and no granted folder reach it here. start() adopts it only for a spec whose command line is
   * exactly the same (the runner, the limits; the wrapper is this runtime's); anything else, and discardSpare(), kills
   * it. JavaScript revisions without granted folders, on Node or Deno (whose process start is most of a sandbox's
   * start); not Python, whose start is Pyodide's (seconds) after a process start of about a hundredth of it; one at a
   * time. Never throws: a process that cannot start leaves start() to spawn as usual.
   */
  prestart(spec: SandboxSpec): void {
    const exec = spec.manifest.execution;
    if (
      this.#spare ||
      exec.kind !== 'sandboxed-code' ||
      exec.runtime !== 'javascript' ||
      (spec.folders?.length ?? 0) > 0
    )
      return;
    this.#sweepOnce();
    try {
      const base = this.command(spec);
      const cmd: ReturnType<SpawnWrapper> = this.#opts.wrap ? this.#opts.wrap({ ...base, spawnerSetsIds: true }) : base;
      const child = spawn(cmd.command, cmd.args, spawnOptions(cmd, tmpdir()));
      const release = cmd.release;
      const exited = new Promise<void>((r) => {
        child.once('exit', () => r());
        child.once('error', () => r());
      });
      if (release) void exited.then(release);
      if (child.pid === undefined) return; // spawn failed (its error event releases the lease)
      trackGroup(child.pid);
      this.#spare = { key: JSON.stringify(base), child, pid: child.pid, exited };
    } catch {
      /* start() spawns as usual */
    }
  }

  /**
   * Deno: once per host process, remove the temporary DENO_DIRs earlier versions' dead hosts left (sweepStaleDenoDirs).
   */
  #sweepOnce(): void {
    if (this.#opts.engine !== 'deno' || swept) return;
    swept = true;
    sweepStaleDenoDirs();
  }

  /**
   * Kill the prestarted process no call adopted (its whole process group, SIGKILL) and wait until it has exited and
   * been reaped (at most 5 s). Idempotent; never throws.
   */
  async discardSpare(): Promise<void> {
    const s = this.#spare;
    this.#spare = undefined;
    if (s) this.#reaping = reap(s);
    await this.#reaping;
  }

  /**
   * Spawn (or adopt the prestarted process), handshake and load the revision's source.
   * @throws TyError E_SANDBOX_UNAVAILABLE (binary/runner missing), E_TOOL_FAILED (module failed to load),
   *   E_TIMEOUT (no `loaded` within the start budget), E_ABORTED, E_SANDBOX_FAILED, E_MEMORY_LIMIT, E_PROTOCOL.
   */
  async start(spec: SandboxSpec, signal?: AbortSignal): Promise<NodeSandboxInstance> {
    const exec = spec.manifest.execution;
    if (exec.kind !== 'sandboxed-code') {
      throw new TyError('E_SANDBOX_UNAVAILABLE', 'this runtime runs sandboxed code (JavaScript, Python) only');
    }
    if (signal?.aborted) throw new TyError('E_ABORTED', 'sandbox start aborted');
    const wanted = exec.runtime === 'python' ? (spec.manifest.python?.packages ?? []) : [];
    let packages: PythonPackageFile[] | undefined;
    if (wanted.length > 0) {
      if (!this.#opts.pythonPackages)
        throw new TyError('E_SANDBOX_UNAVAILABLE', "this host has no folder to load the revision's Python wheels from");
      packages = await this.#opts.pythonPackages(spec.revision, wanted);
    }
    let cmd: ReturnType<SpawnWrapper> | undefined;
    let spare: ChildProcessWithoutNullStreams | undefined;
    const s = this.#spare;
    if (s) {
      // The prestarted process, when it runs exactly this spec's command line.
      let key: string | undefined;
      try {
        key = JSON.stringify(this.command(spec, packages));
      } catch {
        /* the spec's own command line reports it below */
      }
      if (key === s.key && s.child.exitCode === null && s.child.signalCode === null) {
        this.#spare = undefined;
        spare = s.child;
      } else void this.discardSpare();
    }
    if (!spare) {
      this.#sweepOnce();
      const base = this.command(spec, packages);
      cmd = this.#opts.wrap ? this.#opts.wrap({ ...base, spawnerSetsIds: true }) : base;
    }
    const child = spare ?? (await this.#spawn(cmd!));
    const onLog = this.#opts.onLog;
    // Stack frames in log lines point at the tool's source files (core/exec/stack.ts), never at the loaded module.
    const mappedLog: NodeSandboxRuntimeOptions['onLog'] = onLog
      ? (rev, level, text) => onLog(rev, level, mapStackText(spec.manifest, text))
      : undefined;
    const inst = new NodeSandboxInstance(
      spec.revision,
      this.#opts.engine,
      child,
      mappedLog,
      this.#opts.wrap !== undefined,
    );
    const python = exec.runtime === 'python';
    const budget = this.#opts.startTimeoutMs ?? (python ? PYTHON_SANDBOX_NEEDS.startTimeoutMs : 15_000);
    const progress = python ? this.#opts.onStartProgress : undefined;
    progress?.({ revision: spec.revision, runtime: 'python', phase: 'start' });
    try {
      await inst.channel.load(exec.runtime, exec.source, budget, signal);
    } catch (e) {
      progress?.({ revision: spec.revision, runtime: 'python', phase: 'failed' });
      await inst.destroy('start failed');
      // Pyodide's start runs no tool code (the source runs on the first call): its integrity and availability
      // refusals keep their own codes.
      const inner = e instanceof TyError && e.code === 'E_TOOL_FAILED' ? e.data?.toolCode : undefined;
      if (python && (inner === 'E_INTEGRITY' || inner === 'E_SANDBOX_UNAVAILABLE' || inner === 'E_INVALID_MANIFEST'))
        throw new TyError(inner, (e as TyError).message.replace(/^Error: /, ''));
      throw e;
    }
    progress?.({ revision: spec.revision, runtime: 'python', phase: 'done' });
    return inst;
  }
}
