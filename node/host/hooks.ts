// Runs hook commands from settings (JSON on stdin, timeout, whole process group killed); Node host, trusted side.
import { spawn } from 'node:child_process';
import type { HookResult, HookRunner, HookSpec } from '../../core/policy/hooks.js';
import { killGroup } from '../process/groups.js';

export interface NodeHookRunnerOptions {
  /** Working folder for hooks (the project root, else the CLI's cwd). */
  cwd: string;
  /** Environment handed to hooks (default: the CLI's own). `TYCLI_HOOK_EVENT` is added. */
  env?: NodeJS.ProcessEnv;
  /** Shell used to run `command` (default /bin/sh, run as `sh -c COMMAND`). */
  shell?: string;
  /** Cap on captured stdout and stderr each, bytes (default 64 KiB); the rest is dropped. */
  maxOutputBytes?: number;
}

/**
 * Runs each hook as `sh -c COMMAND` in a process group of its own, writes the payload (one JSON
 * document) to its stdin and closes it, captures capped stdout/stderr, and kills the whole group on
 * timeout (`hook.timeoutMs`), on abort, and once the hook exits (so nothing it started in the
 * background outlives it). Never throws: a hook that cannot start comes back with `exitCode: null`.
 * POSIX only (process groups); the gate decides what exit codes mean (core/policy/gate.ts).
 */
export class NodeHookRunner implements HookRunner {
  readonly #o: Required<Omit<NodeHookRunnerOptions, 'env'>> & { env: NodeJS.ProcessEnv };
  constructor(opts: NodeHookRunnerOptions) {
    this.#o = {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      shell: opts.shell ?? '/bin/sh',
      maxOutputBytes: opts.maxOutputBytes ?? 64 * 1024,
    };
  }

  run(hook: HookSpec, input: string, signal?: AbortSignal): Promise<HookResult> {
    return new Promise<HookResult>((resolveRun) => {
      const max = this.#o.maxOutputBytes;
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let outLen = 0;
      let errLen = 0;
      let timedOut = false;
      let exitCode: number | null = null;
      let startError: string | undefined;
      let settled = false;
      let child: ReturnType<typeof spawn>;
      try {
        child = spawn(this.#o.shell, ['-c', hook.command], {
          cwd: this.#o.cwd,
          env: { ...this.#o.env, TYCLI_HOOK_EVENT: hook.event },
          stdio: ['pipe', 'pipe', 'pipe'],
          detached: true,
          windowsHide: true,
        });
      } catch (e) {
        resolveRun({
          exitCode: null,
          stdout: '',
          stderr: '',
          timedOut: false,
          error: e instanceof Error ? e.message : 'spawn failed',
        });
        return;
      }
      const finish = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        killGroup(child.pid);
        const r: HookResult = {
          exitCode: timedOut ? null : exitCode,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
          timedOut,
        };
        if (startError !== undefined) r.error = startError;
        resolveRun(r);
      };
      const onAbort = () => {
        startError = 'aborted';
        killGroup(child.pid);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child.pid);
      }, hook.timeoutMs);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });

      child.stdout?.on('data', (b: Buffer) => {
        if (outLen < max) out.push(b.subarray(0, max - outLen));
        outLen += b.length;
      });
      child.stderr?.on('data', (b: Buffer) => {
        if (errLen < max) err.push(b.subarray(0, max - errLen));
        errLen += b.length;
      });
      child.stdin?.on('error', () => {
        /* the hook did not read its input (EPIPE): fine */
      });
      child.on('error', (e) => {
        startError = e.message;
        exitCode = null;
        finish();
      });
      child.on('exit', (code) => {
        exitCode = code;
        // Kill anything the hook left running in its group, so its pipes close and nothing outlives it.
        killGroup(child.pid);
      });
      child.on('close', finish);
      child.stdin?.end(input);
    });
  }
}
