// A bridge-side session's answer to its server's elicitation/create (a person, or a 2026-07-28 client the call was
// relayed to), on the transport; core, trusted side.
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import type { PendingCall, UpstreamOptions } from './options.js';

/**
 * An `elicitation/create` request of the server (answered on the transport, never by the SDK Client) or a
 * notifications/cancelled naming one; false for anything else. The session's only call in flight may take the request
 * (PendingCall.input: its client can be asked, core/mcp/input/suspend.ts); else `elicit` (a person) answers. While one
 * waits (`elicits` not empty), the session's call deadlines do not run out; when it ends they start again.
 */
export function answerElicitation(
  m: Record<string, unknown>,
  elicit: NonNullable<UpstreamOptions['elicit']>,
  s: {
    elicits: Map<unknown, AbortController>;
    calls: Map<string, PendingCall>;
    send: (message: Record<string, unknown>) => Promise<void>;
    timeoutMs: number;
  },
): boolean {
  const params = (m.params ?? {}) as Record<string, unknown>;
  if (m.method === 'notifications/cancelled') {
    const ac = s.elicits.get(params.requestId);
    ac?.abort();
    return ac !== undefined;
  }
  const id = m.id;
  if ((typeof id !== 'string' && typeof id !== 'number') || s.elicits.has(id)) return false;
  const ac = new AbortController();
  s.elicits.set(id, ac);
  const reply = (body: Record<string, unknown>): void =>
    void s.send({ jsonrpc: '2.0', id, ...body }).catch(() => undefined);
  const only = s.calls.size === 1 ? [...s.calls.values()][0] : undefined;
  const answer =
    only?.input !== undefined ? only.input('elicitation/create', params, ac.signal) : elicit(params, ac.signal);
  void answer
    .then(
      (result) => reply({ result }),
      (e: unknown) =>
        reply({
          error:
            e instanceof ProtocolError
              ? {
                  code: e.code,
                  message: e.message.replace(/^MCP error -?\d+: /, ''),
                  ...(e.data !== undefined ? { data: e.data } : {}),
                }
              : { code: ProtocolErrorCode.InternalError, message: 'the elicitation failed' },
        }),
    )
    .finally(() => {
      s.elicits.delete(id);
      // the person's (or client's) time does not count against the calls waiting on this answer
      for (const c of s.calls.values()) c.deadline = Date.now() + s.timeoutMs;
    });
  return true;
}
