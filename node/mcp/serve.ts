// `tycli mcp serve` over stdio: core's guarded line transport (the client-message rules) on a Node stream pair in front of the bridge; Node host, trusted side.
import type { Readable, Writable } from 'node:stream';
import { GuardedLineTransport } from '../../core/mcp/guarded-transport.js';
import { MAX_MESSAGE_BYTES } from '../../core/mcp/messages.js';
import { serveSession } from '../../core/mcp/serve-session.js';
import type { McpBridge } from './bridge.js';

/** core/mcp/guarded-transport.ts GuardedLineTransport over a Readable (client to bridge) and a Writable (bridge to client). */
export class GuardedStreamTransport extends GuardedLineTransport {
  private readonly onData = (chunk: Buffer): void => this.receive(chunk);
  private readonly onEnd = (): void => this.end();

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    onDropped?: (reason: string) => void,
    maxBytes: number = MAX_MESSAGE_BYTES,
  ) {
    super((text) => {
      if (!output.destroyed) output.write(text);
    }, onDropped, maxBytes);
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
 * Resolves when the session is over.
 */
export async function serveStream(bridge: McpBridge, input: Readable, output: Writable, onDropped?: (reason: string) => void): Promise<void> {
  await serveSession(bridge, new GuardedStreamTransport(input, output, onDropped));
}
