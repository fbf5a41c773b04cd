// Unit tests for the canonical encoding and content ids.
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical.js';
import { contentId, DOMAINS, isContentId } from './cid.js';
import { TyError } from '../errors.js';

describe('canonicalJson', () => {
  it('sorts keys, drops undefined members, keeps array order', () => {
    expect(canonicalJson({ b: 1, a: [3, { d: undefined, c: 'x' }] })).toBe('{"a":[3,{"c":"x"}],"b":1}');
  });
  it('refuses what is not plain data', () => {
    for (const v of [NaN, Infinity, new Date(0), new Map(), () => 1, Symbol('s'), 1n, [1, , 3]]) {
      expect(() => canonicalJson({ v })).toThrow(TyError);
    }
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    expect(() => canonicalJson(cyc)).toThrow(/cycle/);
  });
  it('separates domains: equal bodies in different domains get different ids', async () => {
    const a = await contentId(DOMAINS.task, { x: 1 });
    const b = await contentId(DOMAINS.toolRevision, { x: 1 });
    expect(a).not.toBe(b);
    expect(isContentId(a)).toBe(true);
    expect(isContentId('bafkqaaa')).toBe(false);
  });
});
