// Unit tests for client request params checks and the initialize-once lifecycle; test side.
import { describe, expect, it } from 'vitest';
import { specTypeSchemas } from '@modelcontextprotocol/server';
import { ClientLifecycle, checkRequestParams } from './params.js';

describe('checkRequestParams', () => {
  it('passes well-formed params and methods it has no schema for', () => {
    expect(checkRequestParams(1, 'tools/call', { name: 'a__b', arguments: { q: 1 } })).toBeUndefined();
    expect(checkRequestParams(1, 'tools/call', { name: 'a__b' })).toBeUndefined();
    expect(checkRequestParams(1, 'tools/list', undefined)).toBeUndefined();
    expect(checkRequestParams(1, 'ping', undefined)).toBeUndefined();
    expect(checkRequestParams(1, 'x-vendor/thing', 42)).toBeUndefined();
  });
  it('refuses with -32602, E_INVALID_ARGS, the field and what was expected, in one short line without values', () => {
    const r = checkRequestParams(7, 'tools/call', { name: 'a__b', arguments: ['secret-value'] });
    expect(r?.id).toBe(7);
    expect(r?.error.code).toBe(-32602);
    expect(r?.error.data).toEqual({ code: 'E_INVALID_ARGS' });
    expect(r?.error.message).toMatch(
      /^invalid params for tools\/call: params\.arguments: .*expected record, received array$/,
    );
    expect(r?.error.message).not.toContain('secret-value');
    expect(checkRequestParams(1, 'tools/call', 'str')?.error.message).toMatch(/: params: /);
    expect(checkRequestParams(1, 'prompts/get', { name: 'p', arguments: { a: 1 } })?.error.code).toBe(-32602);
    expect(checkRequestParams(1, 'initialize', { capabilities: {} })?.error.code).toBe(-32602);
    expect(checkRequestParams(1, 'tools/call', { ['k'.repeat(5000)]: 1 })?.error.message.length).toBeLessThan(260);
  });
});

describe('checkRequestParams on tools/call (the structural pass before the schema)', () => {
  it('answers exactly as the CallToolRequest schema does for every shape of params', () => {
    const env = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const cases: unknown[] = [
      { name: 'a__b', arguments: { q: 1 } },
      { name: 'a__b', arguments: undefined },
      { name: 'a__b', _meta: { progressToken: 'p' } },
      { name: 'a__b', _meta: { progressToken: 3 } },
      { name: 'a__b', _meta: { progressToken: 3.5 } },
      { name: 'a__b', _meta: { progressToken: null } },
      { name: 'a__b', _meta: { ...env, progressToken: 1 } },
      { name: 'a__b', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' } } },
      { name: 'a__b', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 5 } } },
      { name: 'a__b', _meta: [] },
      { name: 'a__b', arguments: [] },
      { name: 'a__b', arguments: null },
      { name: 'a__b', arguments: 'x' },
      { name: 'a__b', task: { ttl: 5 } },
      { name: 'a__b', task: 'x' },
      { name: 7 },
      {},
      [],
      null,
      'x',
      undefined,
    ];
    for (const params of cases) {
      const schemaOk =
        specTypeSchemas.CallToolRequest['~standard'].validate(
          params === undefined ? { method: 'tools/call' } : { method: 'tools/call', params },
        ).issues === undefined;
      expect(checkRequestParams(1, 'tools/call', params) === undefined, JSON.stringify(params) ?? 'undefined').toBe(
        schemaOk,
      );
    }
  });
});

describe('ClientLifecycle', () => {
  it('lets the first initialize through and refuses every later one with -32600', () => {
    const l = new ClientLifecycle();
    expect(l.check(1, 'tools/list')).toBeUndefined();
    expect(l.check(2, 'initialize')).toBeUndefined();
    expect(l.check(3, 'initialize')?.error).toMatchObject({ code: -32600, data: { code: 'E_MCP' } });
    expect(l.check(4, 'initialize')?.id).toBe(4);
    expect(l.check(5, 'ping')).toBeUndefined();
  });
});
