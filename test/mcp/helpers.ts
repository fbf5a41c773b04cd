// Helpers for MCP bridge tests: temp homes, definitions of the test peers, an in-process client pair; test side.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Answer, AskChannel, Gate, GateRequest, Question } from '../../core/exec/runtime.js';
import { TyError } from '../../core/errors.js';
import { buildDefinition, saveDefinition, type McpDefinition } from '../../node/mcp/definitions.js';
import { McpBridge, type BridgeOptions } from '../../node/mcp/bridge.js';
import { serveStream } from '../../node/mcp/serve.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
export const FIXTURE = join(ROOT, 'test/mcp/peers/raw-server.mjs');

export async function tempHome(): Promise<{ home: string; cleanup: () => Promise<void> }> {
  const home = await mkdtemp(join(tmpdir(), 'tymcp-'));
  return { home, cleanup: () => rm(home, { recursive: true, force: true }) };
}

/** Save a definition running `node SCRIPT ARGS...`. */
export async function addNodeServer(
  home: string,
  name: string,
  script: string,
  args: string[] = [],
  extra: {
    env?: Record<string, string>;
    allow?: string[];
    ask?: 'none' | 'default';
    shared?: boolean;
    timeoutMs?: number;
  } = {},
): Promise<McpDefinition> {
  const def = buildDefinition({
    name,
    command: [process.execPath, script, ...args],
    folder: ROOT,
    processEnv: process.env,
    env: extra.env ?? {},
    allow: extra.allow ?? [],
    ask: extra.ask ?? 'default',
    shared: extra.shared ?? false,
    ...(extra.timeoutMs !== undefined ? { timeoutMs: extra.timeoutMs } : {}),
  });
  await saveDefinition(home, def);
  return def;
}

/**
 * A gate that records requests and answers with `decide` (a person's answer); a request with a server
 * definition's `preapproved` rule is allowed without asking, as PermissionGate does when no rule denies it.
 * `asked` lists the requests `decide` was consulted for.
 */
export class FakeGate implements Gate {
  requests: GateRequest[] = [];
  asked: GateRequest[] = [];
  constructor(public decide: (r: GateRequest) => boolean = () => false) {}
  async authorize(req: GateRequest): Promise<void> {
    this.requests.push(req);
    if (req.preapproved !== undefined) return;
    this.asked.push(req);
    if (!this.decide(req)) throw new TyError('E_CAPABILITY_DENIED', `denied ${req.target ?? ''}`);
  }
  async run<T>(req: GateRequest, execute: () => Promise<T>): Promise<{ value: T }> {
    await this.authorize(req);
    return { value: await execute() };
  }
}

/** A client-side SDK Transport over a PassThrough pair (also exposes raw line writes). */
export class PairTransport implements Transport {
  onclose?: () => void;
  onerror?: (e: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(m: T) => void;
  raw: unknown[] = [];
  private buf = '';
  constructor(
    readonly toServer: PassThrough,
    readonly fromServer: PassThrough,
  ) {}
  async start(): Promise<void> {
    this.fromServer.on('data', (c: Buffer) => {
      this.buf += c.toString('utf8');
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        const m = JSON.parse(line);
        this.raw.push(m);
        this.onmessage?.(m);
      }
    });
  }
  async send(m: JSONRPCMessage): Promise<void> {
    this.toServer.write(JSON.stringify(m) + '\n');
  }
  writeRaw(text: string): void {
    this.toServer.write(text);
  }
  async close(): Promise<void> {
    this.toServer.end();
    this.onclose?.();
  }
}

export interface Connected {
  bridge: McpBridge;
  client: Client;
  transport: PairTransport;
  logs: string[];
  done: Promise<void>;
  close: () => Promise<void>;
}

/** Start a bridge session over an in-process stream pair and connect an SDK Client to it. */
export async function connect(
  opts: Omit<BridgeOptions, 'log'>,
  clientCaps: Record<string, unknown> = { sampling: {}, elicitation: {}, roots: {} },
  makeClient?: (c: Client) => Client,
): Promise<Connected> {
  const logs: string[] = [];
  const bridge = new McpBridge({ ...opts, log: (l) => logs.push(l) });
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const done = serveStream(bridge, toServer, fromServer, (r) => logs.push(`dropped ${r}`));
  const transport = new PairTransport(toServer, fromServer);
  const sdk1 = new Client({ name: 'test', version: '1' }, { capabilities: clientCaps });
  // another client (the 2.x SDK's) in its place when asked for
  const client = makeClient ? makeClient(sdk1) : sdk1;
  await client.connect(transport);
  return {
    bridge,
    client,
    transport,
    logs,
    done,
    close: async () => {
      await client.close().catch(() => undefined);
      toServer.end();
      await done;
      await bridge.close();
    },
  };
}

/** True while a process group exists. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The text of a tool execution error (a CallToolResult with isError: true) and its stable code
 * (`_meta["tysandbox/code"]`); throws when the call rejected or succeeded instead.
 */
export async function toolError(p: Promise<unknown>): Promise<{ text: string; code: unknown }> {
  const r = (await p) as {
    isError?: boolean;
    content?: { type: string; text?: string }[];
    _meta?: Record<string, unknown>;
  };
  if (r.isError !== true) throw new Error(`expected isError, got ${JSON.stringify(r).slice(0, 200)}`);
  return { text: (r.content ?? []).map((c) => c.text ?? '').join('\n'), code: r._meta?.['tysandbox/code'] };
}

/** The MCP error a client call rejects with: JSON-RPC code, the stable tysandbox code in `data`, and message. */
export async function mcpRefusal(p: Promise<unknown>): Promise<{ code: number; stable: unknown; message: string }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof McpError)
      return { code: e.code, stable: (e.data as { code?: string } | undefined)?.code, message: e.message };
    throw e;
  }
  throw new Error('expected a refusal');
}

/** Start `tycli mcp proxy ... --http 0 --json` and read the URL and token it announces. */
export async function startHttpProxy(
  h: string,
  name: string,
  extra: string[] = [],
): Promise<{ proc: ChildProcess; url: string; token: string }> {
  const proc = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'test/mcp/cli-entry.ts'),
      '--home',
      h,
      '--json',
      ...extra,
      'mcp',
      'proxy',
      name,
      '--http',
      '0',
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const line = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (c) => {
      out += String(c);
      const i = out.indexOf('\n');
      if (i >= 0) resolve(out.slice(0, i));
    });
    proc.once('exit', (code) => reject(new Error(`proxy exited ${code}`)));
  });
  const info = JSON.parse(line) as { url: string; tokenFile: string };
  return { proc, url: info.url, token: (await readFile(info.tokenFile, 'utf8')).trim() };
}

/** test/conformance: the conformance suite, the MCP Inspector and Node 22, apart from the project's packages. */
export const CONFORMANCE_DIR = join(ROOT, 'test/conformance');
export const NODE22 = join(CONFORMANCE_DIR, 'node_modules/.bin/node');

/** Install test/conformance from its lockfile when a checkout lacks it (.ci/run installs it up front). */
export function ensureConformanceFolder(): void {
  const need = [
    NODE22,
    join(CONFORMANCE_DIR, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'),
    join(CONFORMANCE_DIR, 'node_modules/conformance-2026-07-28/dist/index.js'),
    join(CONFORMANCE_DIR, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js'),
  ];
  const ready = (): boolean => need.every((f) => existsSync(f));
  const lock = join(CONFORMANCE_DIR, '.install-lock');
  if (ready() && !existsSync(lock)) return;
  // test files run in parallel workers: one installs while the others wait (npm ci empties node_modules first)
  const until = Date.now() + 600_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    try {
      // left by a killed run
      if (Date.now() - statSync(lock).mtimeMs > 600_000) rmSync(lock, { recursive: true, force: true });
    } catch {
      /* released meanwhile */
    }
    if (Date.now() > until)
      throw new Error('could not install test/conformance: another install held its lock for 10 minutes');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  }
  try {
    if (ready()) return;
    // from its own folder and without the npm_config_* of the npm or npx that started the tests, so the folder's own
    // package.json (allowScripts) governs its install, as it does for `npm ci --prefix test/conformance` in .ci/run
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
    const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
      cwd: CONFORMANCE_DIR,
      env,
      stdio: 'inherit',
      timeout: 600_000,
    });
    if (r.status !== 0) throw new Error('could not install test/conformance (npm ci --prefix test/conformance)');
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * A bridge session for one test over `via`: `stdio` (serveStream over a stream pair) or `http` (serveHttp on
 * 127.0.0.1:0 with the SDK's StreamableHTTPClientTransport and the bearer token). `close` ends everything.
 */
export async function openVia(
  via: 'stdio' | 'http',
  opts: Omit<BridgeOptions, 'log'>,
): Promise<{ client: Client; logs: string[]; close: () => Promise<void> }> {
  if (via === 'stdio') {
    const c = await connect(opts, {});
    return { client: c.client, logs: c.logs, close: c.close };
  }
  const { serveHttp } = await import('../../node/mcp/serve-http.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const logs: string[] = [];
  const bridge = new McpBridge({ ...opts, log: (l) => logs.push(l) });
  const h = await serveHttp(bridge, { port: 0 });
  const client = new Client({ name: 'sdk-http', version: '1' }, { capabilities: {} });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(h.url), {
      requestInit: { headers: { authorization: `Bearer ${h.token}` } },
    }),
  );
  return {
    client,
    logs,
    close: async () => {
      await client.close().catch(() => undefined);
      await h.close();
      await bridge.close();
    },
  };
}

/** An ask channel on which a person answers the first question "yes, permanently" and then is gone (no answer). */
export class OnePerson implements AskChannel {
  readonly name = 'scripted';
  questions: Question[] = [];
  answers: (Answer | undefined)[] = [{ allow: true, scope: 'permanent', channel: 'scripted' }];
  live(): boolean {
    return true;
  }
  async ask(q: Question): Promise<Answer | undefined> {
    this.questions.push(q);
    return this.answers.shift();
  }
}
