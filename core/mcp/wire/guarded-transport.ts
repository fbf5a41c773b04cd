// The client-facing guarded transport over newline-delimited JSON-RPC bytes: the client-message rules before the
// bridge's SDK Server sees anything; core, trusted side.
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import {
  LineFramer,
  MAX_MESSAGE_BYTES,
  RPC,
  clientMessageRule,
  envelopeVersion,
  frame,
  parseMessage,
  rpcError,
} from './messages.js';
import { ClientLifecycle, checkRequestParams } from './params.js';
import type { DirectPath } from '../bridge/direct.js';

/**
 * An SDK server Transport over a byte stream (stdio on the command line, a MessagePort or WebSocket carrying
 * lines elsewhere): the host calls `receive(chunk)` with inbound bytes and `end()` when the input ends; `write`
 * sends one framed line. Every inbound line passes the client-message rules first (core/mcp/wire/messages.ts):
 * batches and id-less or null-id requests never reach the server, unknown methods are refused, `initialize`
 * loses the client's capabilities and is accepted once (a second gets -32600), params that do not fit MCP's
 * schema for the method get -32602, a line over `maxBytes` (8 MiB) is refused with memory bounded. With
 * `direct` set, a `tools/call` request and a `notifications/cancelled` that passed the rules are offered to
 * it first (the bridge's direct path) and reach the SDK Server only when it declines.
 */
export class GuardedLineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  /** The bridge's direct path for this session (see McpBridge.directPath). */
  direct?: DirectPath;
  /** Each request's protocol version as its 2026-07-28 `_meta` envelope names it (not called for 2025-era requests). */
  onEnvelope?: (version: string) => void;
  protected closed = false;
  /** A 2026-07-28 request other than server/discover went to the SDK Server: the connection's era is fixed. */
  private pinnedModern = false;
  private markEnded!: () => void;
  /** Settles when the transport closed (the client's input ended, or close() was called). */
  readonly ended: Promise<void> = new Promise<void>((resolve) => {
    this.markEnded = resolve;
  });
  private readonly lifecycle = new ClientLifecycle();
  private readonly framer: LineFramer;

  constructor(
    private readonly writeLine: (text: string) => void,
    private readonly onDropped?: (reason: string) => void,
    private readonly maxBytes: number = MAX_MESSAGE_BYTES,
  ) {
    this.framer = new LineFramer(maxBytes);
  }

  /** Inbound bytes from the client. */
  receive(chunk: Uint8Array): void {
    for (const ev of this.framer.push(chunk)) {
      if (ev.type === 'oversize') {
        this.write(
          rpcError(
            null,
            RPC.INVALID_REQUEST,
            `message over ${Math.round(this.maxBytes / 1048576)} MiB refused`,
            'E_MCP',
          ),
        );
        this.onDropped?.('oversize');
        continue;
      }
      const rule = clientMessageRule(parseMessage(ev.text));
      if (rule.action === 'reply') this.write(rule.reply);
      else if (rule.action === 'drop') this.onDropped?.(rule.reason);
      else {
        const m = rule.message;
        // a request: initialize only once, params as MCP's schema for the method says (-32602, short message)
        let modern = false;
        if (typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number')) {
          const version = envelopeVersion(m.params);
          modern = version !== undefined;
          if (version !== undefined) this.onEnvelope?.(version);
          const refusal = this.lifecycle.check(m.id, m.method) ?? checkRequestParams(m.id, m.method, m.params);
          if (refusal !== undefined) {
            this.write(refusal);
            continue;
          }
        }
        if (this.direct !== undefined) {
          if (m.method === 'tools/call' && this.direct.request(m, this.pinnedModern)) continue;
          if (m.method === 'notifications/cancelled' && this.direct.cancelled(m.params)) continue;
        }
        // the SDK's serveStdio fixes a connection's era at its first enveloped request after server/discover
        if (modern && m.method !== 'server/discover') this.pinnedModern = true;
        this.onmessage?.(m as unknown as JSONRPCMessage);
      }
    }
  }

  /** The client's input ended. */
  end(): void {
    void this.close();
  }

  protected write(message: unknown): void {
    if (this.closed) return;
    this.writeLine(frame(message));
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    this.write(message);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
    this.markEnded();
  }
}
