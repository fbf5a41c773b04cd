// Unit tests of the JSON-RPC codes a client of the MCP bridge gets (errors.ts); core, trusted side.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '@modelcontextprotocol/server';
import { TyError } from '../../errors.js';
import { ERROR_CODES } from '../../../protocol/names.js';
import { BRIDGE_FAILED, GATE_REFUSED, type RpcFailure, rpcCodeOf, toMcpError } from './errors.js';

/** The MCP SDKs' own codes (1.x ErrorCode, 2.x ProtocolErrorCode): the bridge sends none of them for its own errors. */
const SDK_CODES = [-32000, -32001, -32002, -32021, -32022, -32042];

describe('the JSON-RPC codes of the bridge', () => {
  it('every stable code maps to its own JSON-RPC code, none of them one of the SDK codes', () => {
    const table = Object.fromEntries(ERROR_CODES.map((c) => [c, rpcCodeOf(c)]));
    expect(table).toMatchObject({
      E_CAPABILITY_DENIED: GATE_REFUSED,
      E_APPROVAL_REQUIRED: GATE_REFUSED,
      E_PAUSED: GATE_REFUSED,
      E_HOOK_BLOCKED: GATE_REFUSED,
      E_HOOK_FAILED: GATE_REFUSED,
      E_MCP_TIMEOUT: -32011,
      E_MCP_CRASHED: -32012,
      E_MCP_REDEFINED: -32013,
      E_MCP_ENDED: -32014,
      E_MCP_OVERSIZE: -32015,
      E_MCP_GARBAGE: -32016,
      E_BUSY: -32003,
      E_MCP: BRIDGE_FAILED,
      E_INVALID_ARGS: -32602,
      E_UNKNOWN_TOOL: -32602,
    });
    expect(GATE_REFUSED).toBe(-32010);
    expect(BRIDGE_FAILED).toBe(-32019);
    for (const [code, n] of Object.entries(table)) expect(SDK_CODES, code).not.toContain(n);
    // the four meanings -32001 used to share are four codes now
    const four = ['E_CAPABILITY_DENIED', 'E_MCP_ENDED', 'E_MCP_OVERSIZE', 'E_MCP_GARBAGE'].map(rpcCodeOf);
    expect(new Set(four).size).toBe(4);
  });

  it('toMcpError keeps the stable code in data and passes a server error as it is', () => {
    const e = toMcpError(new TyError('E_MCP_ENDED', 'the session ended')) as RpcFailure;
    expect([e.code, e.data]).toEqual([-32014, { code: 'E_MCP_ENDED' }]);
    const fromServer = new ProtocolError(-32001, 'the server says so');
    expect(toMcpError(fromServer)).toBe(fromServer);
    expect((toMcpError(new Error('boom')) as RpcFailure).code).toBe(BRIDGE_FAILED);
  });

  it('docs/errors.md documents every code of the bridge in its table', () => {
    const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    const table = doc.slice(doc.indexOf('## JSON-RPC codes of the MCP bridge'));
    for (const n of [-32003, -32010, -32011, -32012, -32013, -32014, -32015, -32016, -32019])
      expect(table, String(n)).toContain(`| ${n} |`);
    expect(table).not.toContain('| -32001 |');
  });
});
