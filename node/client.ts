// Public API of `tysandbox/client` (package export "./client"): the typed client of the registration protocol,
// connectStdio (Node), connectHttp and connectWindow (Node and the browser); runs on the client's side.
//
// This file is the complete public surface of the entry: named exports only, no wildcards. Besides the three connect
// functions and their option types: the client they return, its error, and the types its methods take and return.
// Anything added here becomes public API.
import {
  ProtocolClient,
  ProtocolError,
  httpTransport,
  type ClientOptions,
  type ClientTransport,
} from '../core/registration/client.js';
import { LineFramer } from '../core/mcp/wire/messages.js';

// The connected client, its error, its options
export {
  ProtocolClient,
  ProtocolError,
  type ClientOptions,
  type ClientTransport,
  type RunOptions,
} from '../core/registration/client.js';
// The protocol's versions and methods
export {
  REGISTRATION_PROTOCOL,
  REGISTRATION_PROTOCOL_V1,
  REGISTRATION_METHODS,
  REGISTRATION_METHODS_V1,
  type RegistrationMethod,
} from '../protocol/registration-names.js';
// ... and what they take and return
export type {
  RegistrationResults,
  InitializeResult,
  ToolRunResult,
  ToolListResult,
  ToolListPage,
  ToolChange,
  ListChangedParams,
  ProgressParams,
  LogParams,
  ParentCallParams,
} from '../protocol/registration.js';

const defaults = (o: Partial<ClientOptions> | undefined): ClientOptions => ({ name: 'client', ...o });

async function connected(
  t: ClientTransport,
  o: Partial<ClientOptions> | undefined,
  patient = false,
): Promise<ProtocolClient> {
  const c = new ProtocolClient(t, defaults(o));
  try {
    if (patient) await c.initializeWhenReady();
    else await c.initialize();
  } catch (e) {
    await c.close().catch(() => undefined);
    throw e;
  }
  return c;
}

export interface StdioOptions extends Partial<ClientOptions> {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Receives the server's stderr (default: discarded). */
  onStderr?: (text: string) => void;
}

/**
 * Start `command` (an argv array, or a string split on white space, e.g. `tycli serve`) and speak the protocol
 * over its stdin/stdout (NDJSON). Node only. Closing the client ends its stdin, then kills it after 5 s.
 * @throws ProtocolError E_USAGE outside Node; the server's errors from initialize.
 */
export async function connectStdio(
  command: string | readonly string[],
  opts: StdioOptions = {},
): Promise<ProtocolClient> {
  const argv = typeof command === 'string' ? command.trim().split(/\s+/) : [...command];
  if (argv.length === 0 || !argv[0]) throw new ProtocolError('E_USAGE', 'connectStdio needs a command', 0);
  if (typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node !== 'string')
    throw new ProtocolError('E_USAGE', 'connectStdio needs Node; in a browser use connectWindow or connectHttp', 0);
  const { spawn } = await import('node:child_process');
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(opts.env ? { env: opts.env as NodeJS.ProcessEnv } : {}),
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
  const framer = new LineFramer();
  let exited = false;
  const t: ClientTransport = {
    send(m) {
      if (exited || child.stdin.destroyed) throw new Error('the server process has ended');
      child.stdin.write(`${JSON.stringify(m)}\n`);
    },
    async close() {
      if (exited) return;
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await new Promise((r) => child.once('exit', r));
      clearTimeout(timer);
    },
  };
  child.stdout.on('data', (d: Buffer) => {
    for (const ev of framer.push(d)) if (ev.type === 'line') t.onmessage?.(ev.text);
  });
  child.stderr.on('data', (d: Buffer) => opts.onStderr?.(d.toString('utf8')));
  child.once('exit', (code, signal) => {
    exited = true;
    t.onclose?.(`the server process ended (${signal ?? `exit ${code}`})`);
  });
  child.once('error', (e) => {
    exited = true;
    t.onclose?.(`the server process could not start: ${e.message}`);
  });
  return connected(t, opts);
}

/** Connect to `tycli serve --http` at `url` (http://127.0.0.1:PORT/tysandbox) with its bearer token. */
export async function connectHttp(
  url: string,
  token: string,
  opts: Partial<ClientOptions> & { fetch?: typeof fetch } = {},
): Promise<ProtocolClient> {
  const f = opts.fetch ?? globalThis.fetch.bind(globalThis);
  return connected(httpTransport(url, token, f), opts);
}

/** What connectWindow listens on: the window the client runs in (default globalThis). */
export interface MessageSource {
  addEventListener(type: 'message', fn: (ev: { data: unknown; origin: string; source: unknown }) => void): void;
  removeEventListener(type: 'message', fn: (ev: { data: unknown; origin: string; source: unknown }) => void): void;
}

/**
 * Speak the protocol to the app in `targetWindow` (e.g. an iframe's contentWindow) whose origin is exactly
 * `origin`: messages are posted to that origin only, and only messages from that window and origin are read.
 * Browser (or any host with window messaging). initialize is repeated until the app answers (it may still be
 * loading), for at most 10 s; an app that does not allow this page's origin never answers.
 */
export async function connectWindow(
  targetWindow: { postMessage(message: unknown, targetOrigin: string): void },
  origin: string,
  opts: Partial<ClientOptions> & { listenOn?: MessageSource } = {},
): Promise<ProtocolClient> {
  const on = opts.listenOn ?? (globalThis as unknown as MessageSource);
  if (typeof on.addEventListener !== 'function')
    throw new ProtocolError('E_USAGE', 'connectWindow needs window messaging (a browser)', 0);
  if (origin === '*' || !/^https?:\/\/[^/]+$/.test(origin))
    throw new ProtocolError(
      'E_USAGE',
      'connectWindow needs the exact origin of the app (scheme://host[:port]), never "*"',
      0,
    );
  const listener = (ev: { data: unknown; origin: string; source: unknown }): void => {
    if (ev.source !== targetWindow || ev.origin !== origin) return;
    t.onmessage?.(ev.data);
  };
  const t: ClientTransport = {
    send(m) {
      targetWindow.postMessage(m, origin);
    },
    async close() {
      on.removeEventListener('message', listener);
    },
  };
  on.addEventListener('message', listener);
  return connected(t, opts, true);
}
