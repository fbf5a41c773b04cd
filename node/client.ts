// Public API of `tysandbox/client` (package export "./client"): the typed client of the registration protocol,
// connectStdio (Node), connectHttp and connectWindow (Node and the browser); runs on the client's side.
//
// This file is the complete public surface of the entry: named exports only, no wildcards. Besides the three connect
// functions and their option types: the client they return, its error, and the types its methods take and return.
// Anything added here becomes public API.
import {
  ProtocolError,
  type ClientOptions,
  type ClientTransport,
  type ProtocolClient,
} from '../core/registration/client.js';
import { connected } from '../core/registration/connect.js';
import { LineFramer } from '../core/mcp/wire/messages.js';

// Connecting over HTTP and to an app in a frame (the same functions as the browser build of this entry)
export { connectHttp, connectWindow, type MessageSource } from '../core/registration/connect.js';
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
