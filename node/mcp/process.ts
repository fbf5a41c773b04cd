// Runs one bridged MCP server as a child process (exact environment, cwd /, own process group) behind the
// server-message rules; Node host, trusted side.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { access, constants } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import type { Transport } from '@modelcontextprotocol/client';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { TyError } from '../../core/errors.js';
import { LineFramer, MAX_MESSAGE_BYTES, frame, parseMessage, serverMessageRule } from '../../core/mcp/wire/messages.js';

/** Look `command` up on the given PATH (not the CLI's own). @throws TyError E_MCP when not found. */
export async function resolveCommand(command: string, path: string | undefined): Promise<string> {
  if (isAbsolute(command)) return command;
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const p = join(dir, command);
    try {
      await access(p, constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  throw new TyError('E_MCP', `the server command "${command.slice(0, 80)}" is not on the saved PATH`);
}

/** util-linux setpriv: `--pdeathsig KILL` asks the kernel to kill the server when the bridge process dies. */
export const SETPRIV = '/usr/bin/setpriv';
let setprivOk: boolean | undefined;

/**
 * How a server is started: on Linux with setpriv present, `setpriv --pdeathsig KILL -- FILE ARGS...` (it
 * sets PR_SET_PDEATHSIG and execs FILE, same pid), so the direct child dies with this process even on
 * SIGKILL; elsewhere FILE ARGS... as they are (the process-group kill on close still applies).
 * Grandchildren (a server started behind npx or a shell) do not get the death signal.
 */
export function withDeathSignal(file: string, args: string[]): { file: string; args: string[] } {
  if (setprivOk === undefined) {
    setprivOk = false;
    if (process.platform === 'linux') {
      try {
        accessSync(SETPRIV, fsConstants.X_OK);
        setprivOk = true;
      } catch {
        /* not installed: today's behaviour */
      }
    }
  }
  return setprivOk ? { file: SETPRIV, args: ['--pdeathsig', 'KILL', '--', file, ...args] } : { file, args };
}

/** Kill a whole process group: TERM, then KILL after `graceMs` (default 1500 ms). Resolves when done. */
export async function killGroup(child: ChildProcess, graceMs = 1500): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const signal = (sig: NodeJS.Signals): void => {
    try {
      process.kill(-pid, sig);
    } catch {
      /* ESRCH: the group is gone */
    }
  };
  const exited =
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((r) => child.once('exit', () => r()));
  signal('SIGTERM');
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
  if (timer) clearTimeout(timer);
  // the leader may have gone while children it started (npx -> node) stay in the group
  signal('SIGKILL');
  await exited;
}

export interface ProcessTransportOptions {
  command: string;
  args: string[];
  /** The server's whole environment; nothing is added. */
  env: Record<string, string>;
  /** Called for every message the rules dropped or answered (method only; for the log). */
  onFiltered?: (what: { action: 'drop' | 'answer'; method?: string }) => void;
  maxMessageBytes?: number;
  /** Server requests handed to the session instead of refused (core/mcp/wire/messages.ts serverMessageRule). */
  passRequests?: ReadonlySet<string>;
  /** How long the server may take to exit after SIGTERM when closed, before its group is killed, ms (default 1500). */
  stopGraceMs?: number;
}

/** Lines that are not JSON-RPC messages a server may send in one session before it is ended. */
export const JUNK_LIMIT = 100;

/**
 * An SDK Transport to a child process over stdio. Unlike the SDK's StdioClientTransport it adds no
 * environment of its own, runs the child in `/` in a new process group, and applies the bridge's
 * server-message rules before anything reaches the client: ping answered, other server requests
 * refused, non-MCP notifications dropped, a message over the cap ends the session.
 */
export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  private child: ChildProcess | undefined;
  private closed = false;
  private starting = false;
  private closing: Promise<void> | undefined;
  /**
   * Why the session ended (an oversize message, too many junk lines, the process exited); undefined when the bridge
   * closed it.
   */
  endReason: TyError | undefined;
  /** Lines that were not JSON-RPC messages (junk, or answers that are not JSON-RPC), this session. */
  private junk = 0;

  constructor(private readonly opts: ProcessTransportOptions) {}

  /** The child's pid (its process group id), once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Start the server process. Refused once the transport was closed (or started): a start that comes after a close (the
   * SDK's version negotiation starts the transport lazily, and a cancelled session start closes it meanwhile) would
   * leave a process nobody stops.
   * @throws TyError E_ABORTED (closed before it started), E_MCP (started already, or the command cannot run).
   */
  async start(): Promise<void> {
    if (this.closed) throw new TyError('E_ABORTED', 'the server session was closed before its process started');
    if (this.starting) throw new TyError('E_MCP', 'the server process was started already');
    this.starting = true;
    const file = await resolveCommand(this.opts.command, this.opts.env.PATH);
    const env: Record<string, string> = { ...this.opts.env };
    // checked here because under setpriv a missing file would show only as an early exit
    try {
      await access(file, constants.X_OK);
    } catch (e) {
      throw new TyError(
        'E_MCP',
        `the server did not start (${String((e as NodeJS.ErrnoException).code ?? 'not executable').slice(0, 40)})`,
      );
    }
    // closed while the command was looked up: nothing is started
    if (this.closed) throw new TyError('E_ABORTED', 'the server session was closed before its process started');
    const run = withDeathSignal(file, this.opts.args);
    const child = spawn(run.file, run.args, {
      cwd: '/',
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'ignore'],
      shell: false,
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      // the code only: the message would carry host paths
      child.once('error', (e: NodeJS.ErrnoException) =>
        reject(new TyError('E_MCP', `the server did not start (${String(e.code ?? 'spawn error').slice(0, 40)})`)),
      );
    });
    const framer = new LineFramer(this.opts.maxMessageBytes ?? MAX_MESSAGE_BYTES);
    const cap = this.opts.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    child.stdout?.on('data', (chunk: Buffer) => {
      if (this.closed) return;
      for (const ev of framer.push(chunk)) {
        if (ev.type === 'oversize') {
          // the session ends at once (pending calls fail with this reason, the pool drops the session so the
          // next call starts a fresh one); the process group is killed in the background
          const reason = new TyError(
            'E_MCP_OVERSIZE',
            `the server sent a message over ${Math.round(cap / 1048576)} MiB (the bridge's cap); its session was ended and the next call starts a new one`,
          );
          this.endReason = reason;
          this.closed = true;
          this.onerror?.(reason);
          this.onclose?.();
          void this.close();
          return;
        }
        this.handleLine(ev.text);
      }
    });
    child.stdin?.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      if (!this.closed) {
        this.closed = true;
        this.endReason ??= new TyError(
          'E_MCP_CRASHED',
          `the server process exited (${signal !== null ? `signal ${signal}` : `exit code ${code ?? '?'}`}); the next call starts a new one`,
        );
        // stragglers left in the group go too
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
        this.onclose?.();
      }
    });
  }

  private handleLine(text: string): void {
    const m = parseMessage(text);
    const rule = serverMessageRule(m, this.opts.passRequests);
    const method = m.kind === 'request' || m.kind === 'notification' ? m.method : undefined;
    if (rule.action === 'answer') {
      this.opts.onFiltered?.({ action: 'answer', method });
      this.write(rule.reply);
      return;
    }
    if (rule.action === 'drop') {
      this.opts.onFiltered?.({ action: 'drop', method });
      if (m.kind === 'invalid') this.countJunk();
      return;
    }
    if (m.kind === 'invalid') {
      this.countJunk();
      return;
    }
    this.onmessage?.(m.message as unknown as JSONRPCMessage);
  }

  /** One more line that is not a JSON-RPC message: past JUNK_LIMIT the session ends (a server gone wrong). */
  private countJunk(): void {
    if (++this.junk < JUNK_LIMIT || this.closed) return;
    const reason = new TyError(
      'E_MCP_GARBAGE',
      `the server sent ${JUNK_LIMIT} lines that are not JSON-RPC messages; its session was ended and the next call starts a new one`,
    );
    this.endReason = reason;
    this.closed = true;
    this.onerror?.(reason);
    this.onclose?.();
    void this.close();
  }

  private write(message: unknown): void {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed || this.closed) return;
    stdin.write(frame(message));
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed)
      throw (
        this.endReason ?? new TyError('E_MCP_ENDED', 'the server session has ended; the next call starts a new one')
      );
    this.write(message);
  }

  /** Stop the server and everything in its process group. Idempotent. */
  async close(): Promise<void> {
    if (this.closing) return this.closing;
    const child = this.child;
    const wasClosed = this.closed;
    this.closed = true;
    this.closing = (async () => {
      if (child) {
        child.stdin?.end();
        await killGroup(child, this.opts.stopGraceMs);
      }
      if (!wasClosed) this.onclose?.();
    })();
    return this.closing;
  }
}
