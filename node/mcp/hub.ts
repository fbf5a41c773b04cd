// Shared MCP servers: one server process per definition run by a hub on a 0600 Unix socket, sessions kept apart by id
// remapping; Node host, trusted side.
import { createHmac, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Server as NetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { LATEST_PROTOCOL_VERSION, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { TyError } from '../../core/errors.js';
import {
  LineFramer,
  MAX_MESSAGE_BYTES,
  RPC,
  frame,
  parseMessage,
  rpcError,
  type RpcId,
} from '../../core/mcp/wire/messages.js';
import { definitionsDir, fingerprint, loadDefinition, type McpDefinition } from './definitions.js';
import { ProcessTransport } from './process.js';

/** A session with this many answers written but not yet read is ended. */
export const MAX_UNREAD_ANSWERS = 64;
/** At most this much server output is kept for one session that is not reading, bytes (1 MiB). */
export const MAX_KEPT_OUTPUT = 1024 * 1024;
/** A hub with no session for this long stops and kills its server's process group, ms (default 5 min). */
export const DEFAULT_HUB_IDLE_MS = 300_000;
/**
 * How long a stopping hub's server may take to exit after SIGTERM before its process group is killed, ms: short, so a
 * hub told to stop (SIGTERM) is gone within a second.
 */
export const HUB_SERVER_GRACE_MS = 400;
/** How long a stopping hub waits for a session to take its last answers before the socket is closed, ms. */
const SESSION_FLUSH_MS = 100;

/** The per-machine secret (32 random bytes, `config/mcp/.key`, 0600), made once. */
export async function machineKey(home: string): Promise<Buffer> {
  const dir = definitionsDir(home);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, '.key');
  try {
    const b = await readFile(file);
    if (b.length === 32) return b;
  } catch {
    /* make one */
  }
  try {
    await writeFile(file, randomBytes(32), { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  await chmod(file, 0o600);
  const b = await readFile(file);
  if (b.length !== 32)
    throw new TyError('E_INVALID_SETTINGS', 'the MCP hub key file is damaged; remove config/mcp/.key');
  return b;
}

/**
 * Socket and lock paths for a definition: `config/mcp/NAME-KEY.sock`, KEY an HMAC-SHA256 (machine secret)
 * over what the server runs as (command, arguments, url, environment with its tokens, folder), so the
 * name, which other users may list, tests no guess of a token; a changed definition gets its own hub.
 */
export async function hubPaths(home: string, def: McpDefinition): Promise<{ socket: string; lock: string }> {
  const key = createHmac('sha256', await machineKey(home))
    .update(fingerprint(def))
    .digest('hex')
    .slice(0, 24);
  const base = join(definitionsDir(home), `${def.name}-${key}`);
  return { socket: `${base}.sock`, lock: `${base}.lock` };
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Take the hub lock (O_EXCL file holding our pid); a stale lock of a dead process is replaced. */
function takeLock(lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(readFileSync(lock, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && pidAlive(pid)) return false;
      try {
        unlinkSync(lock);
      } catch {
        /* raced */
      }
    }
  }
  return false;
}

interface HubSession {
  socket: Socket;
  unread: number;
  /** hub id -> this session's own id, for its requests in flight */
  mine: Set<number>;
}

/**
 * Run the hub for server `name` until it goes idle (no session for `idleMs`), its server exits, or `signal` aborts (the
 * CLI's SIGTERM or Ctrl-C). Returns false at once when another hub holds the lock. Stopping: every request still
 * waiting is answered with E_MCP_ENDED (JSON-RPC -32014: the next call starts a new session), every session's socket
 * is closed, the server gets SIGTERM and, after HUB_SERVER_GRACE_MS, its whole process group SIGKILL; resolves once
 * the socket and lock files are removed (within about half a second of the abort).
 */
export async function runHub(
  home: string,
  name: string,
  opts: { idleMs?: number; signal?: AbortSignal } = {},
): Promise<boolean> {
  const def = await loadDefinition(home, name);
  if (def === undefined || !def.shared || def.command === undefined)
    throw new TyError('E_UNKNOWN_TOOL', `no shared stdio MCP server "${name}"`);
  const { socket: sockPath, lock } = await hubPaths(home, def);
  if (!takeLock(lock)) return false;
  const idleMs = opts.idleMs ?? DEFAULT_HUB_IDLE_MS;
  const sessions = new Set<HubSession>();
  const pending = new Map<number, { session: HubSession; id: RpcId }>();
  const tokens = new Map<number, { session: HubSession; token: string | number }>();
  let nextId = 1;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  let listener: NetServer | undefined;
  let stopping: Promise<void> | undefined;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));

  const server = new ProcessTransport({
    command: def.command,
    args: def.args,
    env: def.env,
    stopGraceMs: HUB_SERVER_GRACE_MS,
  });
  const stop = (why?: string): Promise<void> => {
    stopping ??= (async () => {
      if (idleTimer) clearTimeout(idleTimer);
      // sessions told: each request still waiting gets its answer, then its socket closes
      const told: Promise<void>[] = [];
      for (const s of sessions) {
        for (const h of s.mine) {
          const p = pending.get(h);
          if (p !== undefined)
            writeTo(
              s,
              rpcError(
                p.id,
                -32014,
                `the shared server's hub stopped${why ? ` (${why})` : ''}; the next call starts a new session`,
                'E_MCP_ENDED',
              ),
            );
        }
        told.push(
          new Promise<void>((r) => {
            const t = setTimeout(() => {
              s.socket.destroy();
              r();
            }, SESSION_FLUSH_MS);
            s.socket.once('close', () => {
              clearTimeout(t);
              r();
            });
            s.socket.end();
          }),
        );
      }
      await Promise.all(told);
      sessions.clear();
      await new Promise<void>((r) => (listener ? listener.close(() => r()) : r()));
      await server.close();
      for (const p of [sockPath, lock]) {
        try {
          unlinkSync(p);
        } catch {
          /* gone */
        }
      }
      resolveDone();
    })();
    return stopping;
  };
  const armIdle = (): void => {
    if (idleTimer) clearTimeout(idleTimer);
    if (stopping !== undefined) return;
    if (sessions.size === 0) idleTimer = setTimeout(() => void stop(), idleMs);
  };
  const endSession = (s: HubSession): void => {
    if (!sessions.delete(s)) return;
    s.socket.destroy();
    for (const h of s.mine) pending.delete(h);
    for (const [t, v] of tokens) if (v.session === s) tokens.delete(t);
    armIdle();
  };
  /**
   * Each session is written on its own socket: one that stops reading holds up no other, and is ended past the limits.
   */
  const writeTo = (s: HubSession, m: unknown): void => {
    if (!sessions.has(s)) return;
    if (s.unread >= MAX_UNREAD_ANSWERS || s.socket.writableLength > MAX_KEPT_OUTPUT) return endSession(s);
    if (!s.socket.write(frame(m))) s.unread++;
  };

  // the hub's own handshake with the server: empty client capabilities
  let initResult: Record<string, unknown> | undefined;
  const initDone = new Promise<void>((resolve, reject) => {
    server.onmessage = (msg) => {
      const m = msg as Record<string, unknown>;
      if (initResult === undefined && m.id === 0) {
        if (m.error || typeof m.result !== 'object')
          return reject(new TyError('E_MCP', 'the shared server refused initialize'));
        initResult = m.result as Record<string, unknown>;
        void server.send({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
        return resolve();
      }
      routeFromServer(m);
    };
  });
  server.onclose = () => void stop();
  const routeFromServer = (m: Record<string, unknown>): void => {
    if (!('method' in m)) {
      const p = typeof m.id === 'number' ? pending.get(m.id) : undefined;
      if (!p) return;
      pending.delete(m.id as number);
      p.session.mine.delete(m.id as number);
      writeTo(p.session, { ...m, id: p.id });
      return;
    }
    const params = (m.params ?? {}) as Record<string, unknown>;
    if (m.method === 'notifications/progress') {
      const t = typeof params.progressToken === 'number' ? tokens.get(params.progressToken) : undefined;
      if (t) writeTo(t.session, { ...m, params: { ...params, progressToken: t.token } });
      return;
    }
    if (m.method === 'notifications/cancelled') {
      const p = typeof params.requestId === 'number' ? pending.get(params.requestId) : undefined;
      if (p) writeTo(p.session, { ...m, params: { ...params, requestId: p.id } });
      return;
    }
    for (const s of sessions) writeTo(s, m);
  };
  const routeFromSession = (s: HubSession, text: string): void => {
    const c = parseMessage(text);
    if (c.kind === 'invalid') return writeTo(s, c.reply);
    if (c.kind === 'response') return; // the hub never asks sessions anything
    if (c.kind === 'notification') {
      if (c.method !== 'notifications/cancelled') return; // initialized is the hub's own; the rest stay here
      const params = (c.params ?? {}) as Record<string, unknown>;
      for (const h of s.mine) {
        if (pending.get(h)?.id === params.requestId)
          void server.send({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { ...params, requestId: h },
          } as JSONRPCMessage);
      }
      return;
    }
    if (c.method === 'initialize') return writeTo(s, { jsonrpc: '2.0', id: c.id, result: initResult });
    const hubId = nextId++;
    pending.set(hubId, { session: s, id: c.id });
    s.mine.add(hubId);
    let params = c.params as Record<string, unknown> | undefined;
    const meta = params?._meta as Record<string, unknown> | undefined;
    if (meta && (typeof meta.progressToken === 'string' || typeof meta.progressToken === 'number')) {
      const t = nextId++;
      tokens.set(t, { session: s, token: meta.progressToken });
      params = { ...params, _meta: { ...meta, progressToken: t } };
    }
    const out: Record<string, unknown> = { jsonrpc: '2.0', id: hubId, method: c.method };
    if (params !== undefined) out.params = params;
    void server
      .send(out as JSONRPCMessage)
      .catch(() => writeTo(s, rpcError(c.id, RPC.INTERNAL_ERROR, 'the shared server has ended', 'E_MCP')));
  };

  const onAbort = (): void => void stop('the hub was told to stop');
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await server.start();
    void server.send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'tysandbox-hub', version: '0.1.0' },
      },
    } as JSONRPCMessage);
    await Promise.race([
      initDone,
      done.then(() => {
        throw new TyError('E_ABORTED', 'the hub stopped before its server answered initialize');
      }),
      new Promise((_, rej) =>
        setTimeout(
          () => rej(new TyError('E_MCP', 'the shared server did not answer initialize within 60 s')),
          60_000,
        ).unref(),
      ),
    ]);
    if (stopping !== undefined) throw new TyError('E_ABORTED', 'the hub was told to stop');
    try {
      unlinkSync(sockPath);
    } catch {
      /* none */
    }
    const oldMask = process.umask(0o077);
    listener = createServer((socket) => {
      const s: HubSession = { socket, unread: 0, mine: new Set() };
      sessions.add(s);
      if (idleTimer) clearTimeout(idleTimer);
      const framer = new LineFramer(MAX_MESSAGE_BYTES);
      socket.on('data', (chunk: Buffer) => {
        for (const ev of framer.push(chunk)) {
          if (ev.type === 'oversize')
            writeTo(s, rpcError(null, RPC.INVALID_REQUEST, 'message over 8 MiB refused', 'E_MCP'));
          else routeFromSession(s, ev.text);
        }
      });
      socket.on('drain', () => (s.unread = 0));
      socket.on('error', () => endSession(s));
      socket.on('close', () => endSession(s));
    });
    await new Promise<void>((resolve, reject) => {
      listener!.once('error', reject);
      listener!.listen(sockPath, () => resolve());
    });
    process.umask(oldMask);
    await chmod(sockPath, 0o600);
    armIdle();
  } catch (e) {
    await stop();
    opts.signal?.removeEventListener('abort', onAbort);
    if (e instanceof TyError && e.code === 'E_ABORTED' && opts.signal?.aborted) return true;
    throw e;
  }
  await done;
  opts.signal?.removeEventListener('abort', onAbort);
  return true;
}

/** How the bridge starts a hub process: argv of a `tycli mcp hub NAME` run. */
export type HubLauncher = (def: McpDefinition) => { command: string; args: string[] };

/**
 * Connect to the hub of a shared definition, starting one (detached, its own process group) when none
 * listens. Resolves with the connected socket.
 * @throws TyError E_MCP when no hub listens within 20 s.
 */
export async function connectHub(
  home: string,
  def: McpDefinition,
  launcher: HubLauncher,
  signal?: AbortSignal,
): Promise<Socket> {
  const { socket: sockPath } = await hubPaths(home, def);
  const tryConnect = (): Promise<Socket | undefined> =>
    new Promise((resolve) => {
      const c = createConnection(sockPath);
      c.once('connect', () => resolve(c));
      c.once('error', () => resolve(undefined));
    });
  let sock = await tryConnect();
  if (sock) return sock;
  const { command, args } = launcher(def);
  const child = spawn(command, args, {
    cwd: '/',
    detached: true,
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '' },
  });
  child.unref();
  for (let i = 0; i < 400; i++) {
    if (signal?.aborted) throw new TyError('E_ABORTED', 'cancelled while the hub started');
    await new Promise((r) => setTimeout(r, 50));
    sock = await tryConnect();
    if (sock) return sock;
  }
  throw new TyError('E_MCP', `the hub of shared server "${def.name}" did not start`);
}

/** Client side of a hub connection: line-framed JSON-RPC over the Unix socket. */
export class SocketTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  private closed = false;
  constructor(private readonly socket: Socket) {}
  async start(): Promise<void> {
    const framer = new LineFramer(MAX_MESSAGE_BYTES);
    this.socket.on('data', (chunk: Buffer) => {
      for (const ev of framer.push(chunk)) {
        if (ev.type === 'oversize') continue;
        try {
          this.onmessage?.(JSON.parse(ev.text) as JSONRPCMessage);
        } catch {
          /* not JSON: dropped */
        }
      }
    });
    this.socket.once('close', () => {
      if (!this.closed) {
        this.closed = true;
        this.onclose?.();
      }
    });
  }
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed)
      throw new TyError('E_MCP_ENDED', 'the session with the shared server ended; the next call starts a new one');
    this.socket.write(frame(message));
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.onclose?.();
  }
}
