// `tycli mcp serve` over stdio: core's guarded line transport (the client-message rules) on a Node stream pair in front
// of the bridge; Node host, trusted side.
import type { Readable, Writable } from 'node:stream';
import { GuardedLineTransport } from '../../core/mcp/wire/guarded-transport.js';
import { MAX_MESSAGE_BYTES } from '../../core/mcp/wire/messages.js';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { McpBridge } from './bridge.js';

/**
 * core/mcp/wire/guarded-transport.ts GuardedLineTransport over a Readable (client to bridge) and a Writable (bridge to
 * client).
 */
export class GuardedStreamTransport extends GuardedLineTransport {
  private readonly onData = (chunk: Buffer): void => this.receive(chunk);
  private readonly onEnd = (): void => this.end();

  constructor(
    private readonly input: Readable,
    output: Writable,
    onDropped?: (reason: string) => void,
    maxBytes: number = MAX_MESSAGE_BYTES,
  ) {
    super(
      (text) => {
        if (!output.destroyed) output.write(text);
      },
      onDropped,
      maxBytes,
    );
  }

  override async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.once('end', this.onEnd);
    this.input.once('close', this.onEnd);
  }

  override async close(): Promise<void> {
    if (this.closed) return;
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    this.input.off('close', this.onEnd);
    await super.close();
  }
}

/**
 * Serve one client session over a stream pair until the input ends; then every server session of it stops.
 * The SDK's serveStdio entry owns the connection's era: a client opening with `server/discover` or an
 * enveloped request is served 2026-07-28 (stateless: each request carries its version and capabilities),
 * one opening with `initialize` the 2025 revision it asks for. Resolves when the session is over.
 */
export async function serveStream(
  bridge: McpBridge,
  input: Readable,
  output: Writable,
  onDropped?: (reason: string) => void,
): Promise<void> {
  const sessionId = bridge.newSessionId();
  const transport = new GuardedStreamTransport(input, output, onDropped);
  transport.direct = bridge.directPath(sessionId, (m) => void transport.send(m as JSONRPCMessage));
  transport.onEnvelope = (version) => bridge.noteClientProtocol(sessionId, version);
  const handle = serveStdio(() => bridge.createServer(sessionId), { transport, onerror: () => undefined });
  await transport.ended;
  await handle.close().catch(() => undefined);
  await bridge.closeSession(sessionId);
}
