// `tycli mcp serve` over stdio: a guarded transport applying the client-message rules in front of the bridge's SDK Server; Node host, trusted side.
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { LineFramer, MAX_MESSAGE_BYTES, RPC, clientMessageRule, frame, parseMessage, rpcError } from '../../core/mcp/messages.js';
import { ClientLifecycle, checkRequestParams } from '../../core/mcp/params.js';
import type { DirectPath, McpBridge } from './bridge.js';

/**
 * An SDK server Transport over a byte stream pair (stdio). Every inbound line passes the client-message
 * rules first (core/mcp/messages.ts): batches and id-less or null-id requests never reach the server,
 * unknown methods are refused, `initialize` loses the client's capabilities and is accepted once (a second
 * gets -32600), params that do not fit MCP's schema for the method get -32602, a line over 8 MiB is refused
 * with memory bounded. With `direct` set, a `tools/call` request and a `notifications/cancelled` that
 * passed the rules are offered to it first (the bridge's direct path) and reach the SDK Server only when
 * it declines.
 */
export class GuardedStreamTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  /** The bridge's direct path for this session (see McpBridge.directPath). */
  direct?: DirectPath;
  private closed = false;
  private readonly lifecycle = new ClientLifecycle();
  private readonly framer: LineFramer;
  private readonly onData = (chunk: Buffer): void => {
    for (const ev of this.framer.push(chunk)) {
      if (ev.type === 'oversize') {
        this.write(rpcError(null, RPC.INVALID_REQUEST, `message over ${Math.round(this.maxBytes / 1048576)} MiB refused`, 'E_MCP'));
        this.onDropped?.('oversize');
        continue;
      }
      const rule = clientMessageRule(parseMessage(ev.text));
      if (rule.action === 'reply') this.write(rule.reply);
      else if (rule.action === 'drop') this.onDropped?.(rule.reason);
      else {
        const m = rule.message;
        // a request: initialize only once, params as MCP's schema for the method says (-32602, short message)
        if (typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number')) {
          const refusal = this.lifecycle.check(m.id, m.method) ?? checkRequestParams(m.id, m.method, m.params);
          if (refusal !== undefined) {
            this.write(refusal);
            continue;
          }
        }
        if (this.direct !== undefined) {
          if (m.method === 'tools/call' && this.direct.request(m)) continue;
          if (m.method === 'notifications/cancelled' && this.direct.cancelled(m.params)) continue;
        }
        this.onmessage?.(m as unknown as JSONRPCMessage);
      }
    }
  };
  private readonly onEnd = (): void => void this.close();

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly onDropped?: (reason: string) => void,
    private readonly maxBytes: number = MAX_MESSAGE_BYTES,
  ) {
    this.framer = new LineFramer(maxBytes);
  }

  async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.once('end', this.onEnd);
    this.input.once('close', this.onEnd);
  }

  private write(message: unknown): void {
    if (this.closed || this.output.destroyed) return;
    this.output.write(frame(message));
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.write(message);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    this.input.off('close', this.onEnd);
    this.onclose?.();
  }
}

/**
 * Serve one client session over a stream pair until the input ends; then every server session of it stops.
 * Resolves when the session is over.
 */
export async function serveStream(bridge: McpBridge, input: Readable, output: Writable, onDropped?: (reason: string) => void): Promise<void> {
  const sessionId = bridge.newSessionId();
  const server = bridge.createServer(sessionId);
  const transport = new GuardedStreamTransport(input, output, onDropped);
  transport.direct = bridge.directPath(sessionId, (m) => void transport.send(m as JSONRPCMessage));
  const done = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  await server.connect(transport);
  await done;
  await bridge.closeSession(sessionId);
}
