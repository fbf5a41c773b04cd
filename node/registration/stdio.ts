// The registration protocol on the command line: the Node host behind a RegistrationServer, served as NDJSON over
// stdio; Node host, trusted side.
import { readFileSync, readlinkSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { LineFramer } from '../../core/mcp/wire/messages.js';
import { RegistrationServer, type RegistrationServerOptions } from '../../core/registration/server.js';
import { rpcFailure, RPC_CODES } from '../../core/registration/rpc.js';
import { TyError } from '../../core/errors.js';
import type { NodeHost } from '../host/host.js';

/** The principal of a command-line protocol client: `protocol:<client name>` (the name from its initialize). */
export const cliPrincipal = (client: { name: string }): string => `protocol:${client.name}`;

/**
 * A RegistrationServer over a Node host: registry and gate of the host, `tool/run` through its invoker (the
 * session's principal on every call). Wire the host's `onToolLog` to `server.toolLog` for `$/log`. `rate`: the
 * registration rate (default one in this process's memory; a StoreRate shares it with every instance).
 * @throws TyError E_SANDBOX_UNAVAILABLE when the host was opened without its gate.
 */
export function protocolServerFor(
  host: NodeHost,
  limits?: RegistrationServerOptions['limits'],
  rate?: RegistrationServerOptions['rate'],
): RegistrationServer {
  if (!host.gate) throw new TyError('E_SANDBOX_UNAVAILABLE', 'the protocol needs a host with its gate');
  const opts: RegistrationServerOptions = {
    registry: host.registry,
    gate: host.gate,
    run: (ref, args, o) => host.invoker.invoke(ref, args, o),
    reservedNames: () => host.registry.builtins().map((b) => b.name),
    refusals: host.refusals,
  };
  if (limits) opts.limits = limits;
  if (rate) opts.rate = rate;
  return new RegistrationServer(opts);
}

/**
 * Serve one session on a byte stream pair: one JSON-RPC message per line (NDJSON, UTF-8, `\n`), each at most
 * the server's maxMessageBytes (a longer line is skipped as it arrives and answered with an E_PROTOCOL error).
 * Requests are handled in order (runs alongside later requests); answers to lines without a usable id (bad JSON,
 * oversize, not a request) are sent in input order, never before the answers to earlier requests; every answer is
 * one line. Resolves when
 * `input` has ended and every request read was answered: a client may write its requests, close its end and read
 * the answers (`tycli serve < requests`). Runs still in flight are cancelled (the session closed) once nobody can
 * read their answers: the output fails (EPIPE) or closes, or this process's parent, the client that started it,
 * is gone (`process.ppid` changed: re-parented, checked every `peerCheckMs`, default 250 ms, while runs are left).
 */
export async function serveProtocolStream(
  server: RegistrationServer,
  input: Readable,
  output: Writable,
  opts: { peerCheckMs?: number } = {},
): Promise<void> {
  const clientGone = watchClient();
  const write = (m: unknown): void => {
    if (!output.writableEnded && !output.destroyed) output.write(`${JSON.stringify(m)}\n`);
  };
  const session = server.connect({ principal: cliPrincipal, send: write });
  const framer = new LineFramer(server.limits.maxMessageBytes);
  const inflight = new Set<Promise<void>>();
  const track = (p: Promise<void>): void => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };
  try {
    for await (const chunk of input) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      for (const ev of framer.push(bytes)) {
        // A refusal without an id takes its place in the input order like every other answer
        // (core/registration/server.ts inOrder).
        if (ev.type === 'oversize')
          track(
            session.inOrder(
              rpcFailure(
                null,
                RPC_CODES.INVALID_REQUEST,
                `message over ${server.limits.maxMessageBytes} bytes refused`,
                'E_PROTOCOL',
              ),
              write,
            ),
          );
        else track(session.receive(ev.text, write).catch(() => undefined));
      }
    }
  } finally {
    // end of input: answer what was asked (runs finish or time out) while someone can read the answers
    const gone = (): void => session.close();
    output.once('error', gone);
    output.once('close', gone);
    const watch = inflight.size > 0 ? setInterval(() => clientGone() && gone(), opts.peerCheckMs ?? 250) : undefined;
    try {
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
    } finally {
      clearInterval(watch);
      output.off('error', gone);
      output.off('close', gone);
      session.close();
    }
  }
}

/**
 * A check for "the client that started this process is gone". The parent being replaced (`process.ppid` changed:
 * re-parented) always counts. On Linux (/proc) the client is also found past wrappers that pass this process's
 * stdout through (`sh -c`, npx, a launcher script): the nearest ancestor whose fd 1 is not this process's stdout;
 * it is gone when its /proc entry is missing, a zombie, or another process (a different start time) under its pid.
 */
export function watchClient(): () => boolean {
  const parent = process.ppid;
  const proc = (pid: number): { ppid: number; start: string; zombie: boolean } | undefined => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // fields after the command name (which may hold spaces and parentheses): state ppid ... starttime (22nd field)
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return { ppid: Number(rest[1]), start: rest[19] ?? '', zombie: rest[0] === 'Z' };
    } catch {
      return undefined;
    }
  };
  let client: { pid: number; start: string } | undefined;
  try {
    const ours = readlinkSync('/proc/self/fd/1');
    let pid = parent;
    for (let depth = 0; depth < 8 && pid > 1; depth++) {
      const p = proc(pid);
      if (!p) break;
      let theirs: string | undefined;
      try {
        theirs = readlinkSync(`/proc/${pid}/fd/1`);
      } catch {
        theirs = undefined;
      }
      if (theirs !== ours || depth === 7) {
        client = { pid, start: p.start };
        break;
      }
      pid = p.ppid;
    }
  } catch {
    client = undefined; // no /proc (macOS): the parent check alone
  }
  return () => {
    if (process.ppid !== parent) return true;
    if (!client || client.pid === parent) return false;
    const now = proc(client.pid);
    return now === undefined || now.zombie || now.start !== client.start;
  };
}
