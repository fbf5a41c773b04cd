// Unit tests for the json-reshape example tool's logic; test side.
import { describe, expect, it } from 'vitest';
import run, { flatten, getPath, reshape } from './index.mjs';

const people = JSON.stringify([
  { id: 1, name: { first: 'Ada', last: 'Lovelace' }, tags: ['math', 'poetry'] },
  { id: 2, name: { first: 'Alan' }, tags: [] },
]);

describe('json-reshape', () => {
  it('reads dot paths through objects and arrays', () => {
    const doc = { a: { b: [{ c: 5 }] } };
    expect(getPath(doc, 'a.b.0.c')).toEqual({ found: true, value: 5 });
    expect(getPath(doc, 'a.b.1.c')).toEqual({ found: false });
    expect(getPath(doc, 'a.toString')).toEqual({ found: false });
    expect(() => getPath(doc, 'a..b')).toThrow('is not a path');
  });
  it('picks paths per record and counts missing ones', () => {
    const r = reshape({ json: people, pick: ['id', 'name.last', 'tags.0'] });
    expect(r.result).toEqual([{ id: 1, 'name.last': 'Lovelace', 'tags.0': 'math' }, { id: 2 }]);
    expect(r.records).toBe(2);
    expect(r.missing).toEqual({ 'name.last': 1, 'tags.0': 1 });
  });
  it('flattens with a separator, keeping empty containers as values', () => {
    expect(flatten({ a: { b: 1, c: [2, { d: 3 }] }, e: {}, f: [] }, '_')).toEqual({ a_b: 1, a_c_0: 2, a_c_1_d: 3, e: {}, f: [] });
    expect(flatten(7)).toBe(7);
  });
  it('renames after flattening', () => {
    const r = reshape({ json: people, flatten: true, rename: { 'name.first': 'first', id: 'ID' } });
    expect((r.result as unknown[])[0]).toEqual({ ID: 1, first: 'Ada', 'name.last': 'Lovelace', 'tags.0': 'math', 'tags.1': 'poetry' });
  });
  it('keeps "__proto__" keys as data, never as a prototype', () => {
    const r = reshape({ json: '{"__proto__":{"polluted":true},"x":{"__proto__":1}}', flatten: true, rename: { 'x.__proto__': '__proto__' } });
    const out = r.result as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(out)).toEqual(['__proto__.polluted', '__proto__']);
    expect(JSON.stringify(out)).toBe('{"__proto__.polluted":true,"__proto__":1}');
  });
  it('reports invalid JSON clearly', async () => {
    expect(() => reshape({ json: '{nope' })).toThrow('not valid JSON');
    expect(await run({ json: '{"a":{"b":1}}', flatten: true })).toEqual({ result: { 'a.b': 1 }, records: 1, missing: {} });
  });
});
