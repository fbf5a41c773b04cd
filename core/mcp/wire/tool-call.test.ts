// Unit tests for the bridge's own tools/call shapes on the wire (params, 2026-07-28 results, server results); core,
// trusted side.
import { describe, expect, it } from 'vitest';
import { checkToolResult, encodeModernToolResult, toolCallParams } from './tool-call.js';

describe('toolCallParams (what the direct path takes)', () => {
  it('takes a name, object arguments and a string or integer progress token', () => {
    expect(toolCallParams({ name: 'a__b', arguments: { q: 1 } })).toEqual({ name: 'a__b', arguments: { q: 1 } });
    expect(toolCallParams({ name: 'a__b' })).toEqual({ name: 'a__b', arguments: undefined });
    expect(toolCallParams({ name: 'a__b', _meta: { progressToken: 'p' } })).toEqual({
      name: 'a__b',
      arguments: undefined,
      progressToken: 'p',
    });
    expect(toolCallParams({ name: 'a__b', _meta: { progressToken: 7 } })?.progressToken).toBe(7);
    expect(toolCallParams({ name: 'a__b', _meta: {} })).toEqual({ name: 'a__b', arguments: undefined });
  });
  it('declines anything else, so the SDK path answers it', () => {
    for (const p of [
      undefined,
      null,
      [],
      'x',
      {},
      { name: 1 },
      { name: 'a__b', arguments: 'x' },
      { name: 'a__b', arguments: [] },
      { name: 'a__b', arguments: null },
      { name: 'a__b', _meta: 'm' },
      { name: 'a__b', _meta: { progressToken: {} } },
      { name: 'a__b', _meta: { progressToken: 1.5 } },
      { name: 'a__b', task: {} },
    ]) {
      expect(toolCallParams(p), JSON.stringify(p)).toBeUndefined();
    }
  });
});

describe('toolCallParams and encodeModernToolResult under 2026-07-28', () => {
  const env = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1', title: 'C' },
  };
  it('takes a plain envelope (version named) and declines every envelope or retry the SDK must judge', () => {
    expect(
      toolCallParams({
        name: 'a__b',
        arguments: {},
        _meta: { ...env, progressToken: 3, 'io.modelcontextprotocol/logLevel': 'info', 'x.example/k': 1 },
      }),
    ).toEqual({ name: 'a__b', arguments: {}, progressToken: 3, envelope: '2026-07-28' });
    const odd = [
      { ...env, 'io.modelcontextprotocol/protocolVersion': 7 },
      { ...env, 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } },
      { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
      { ...env, 'io.modelcontextprotocol/clientInfo': { name: 'c' } },
      { ...env, 'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1', icons: [] } },
      { ...env, 'io.modelcontextprotocol/clientInfo': 'c' },
      { ...env, 'io.modelcontextprotocol/logLevel': 'loud' },
      { ...env, 'io.modelcontextprotocol/other': 1 },
    ];
    for (const meta of odd)
      expect(toolCallParams({ name: 'a__b', arguments: {}, _meta: meta }), JSON.stringify(meta)).toBeUndefined();
    expect(toolCallParams({ name: 'a__b', arguments: {}, _meta: env, inputResponses: {} })).toBeUndefined();
    expect(toolCallParams({ name: 'a__b', arguments: {}, _meta: env, requestState: 's' })).toBeUndefined();
  });
  it('encodes a result as the SDK Server does: resultType complete unless named, the server identity unless _meta has one', () => {
    const me = { name: 'tysandbox', version: '0.1.0' };
    const key = 'io.modelcontextprotocol/serverInfo';
    expect(encodeModernToolResult({ content: [] }, me)).toEqual({
      content: [],
      resultType: 'complete',
      _meta: { [key]: me },
    });
    expect(encodeModernToolResult({ content: [], _meta: { k: 1 } }, me)).toEqual({
      content: [],
      resultType: 'complete',
      _meta: { k: 1, [key]: me },
    });
    expect(
      encodeModernToolResult(
        { content: [], resultType: 'complete', _meta: { [key]: { name: 'up', version: '2' } } },
        me,
      ),
    ).toEqual({ content: [], resultType: 'complete', _meta: { [key]: { name: 'up', version: '2' } } });
    expect(encodeModernToolResult({ content: [], _meta: 'odd' }, me)).toEqual({
      content: [],
      resultType: 'complete',
      _meta: 'odd',
    });
  });
});

describe('checkToolResult', () => {
  it('passes content blocks of every MCP kind and keeps other fields; a missing content becomes []', () => {
    const content = [
      { type: 'text', text: 't' },
      { type: 'image', data: 'AA==', mimeType: 'image/png' },
      { type: 'audio', data: 'AA==', mimeType: 'audio/wav' },
      { type: 'resource_link', uri: 'file:///x', name: 'x' },
      { type: 'resource', resource: { uri: 'file:///x', text: 'x' } },
      { type: 'resource', resource: { uri: 'file:///x', blob: 'AA==' } },
    ];
    const r = checkToolResult({ content, isError: false, structuredContent: { a: 1 }, extra: 1 });
    expect(r).toEqual({ ok: true, result: { content, isError: false, structuredContent: { a: 1 }, extra: 1 } });
    const empty = { isError: true };
    expect(checkToolResult(empty)).toEqual({ ok: true, result: { isError: true, content: [] } });
    expect(empty).toEqual({ isError: true }); // input unchanged
  });
  it('refuses a result that is not an object, or a malformed field or block', () => {
    for (const v of [
      42,
      null,
      [],
      'x',
      { content: 'x' },
      { content: [1] },
      { content: [{ type: 'text' }] },
      { content: [{ type: 'image', data: 'x' }] },
      { content: [{ type: 'resource', resource: { uri: 'u' } }] },
      { content: [{ type: 'nope' }] },
      { content: [], isError: 'yes' },
      { content: [], structuredContent: [1] },
      { content: [], _meta: 1 },
    ]) {
      expect(checkToolResult(v).ok, JSON.stringify(v)).toBe(false);
    }
  });
});
