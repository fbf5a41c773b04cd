// Unit tests of the bridge's input-request decisions (relay, a person, refusal) with a scripted server answer; core,
// test side.
import { describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../audit/trail.js';
import { compilePolicy } from '../../policy/permissions.js';
import { Elicitor } from './elicit.js';
import { callTakingInput, checkedResponses, formShapes } from './relay.js';
import type { CallInput } from '../upstream/session.js';

const asks = (inputRequests: Record<string, unknown>) => ({ resultType: 'input_required', inputRequests });
const elicitation = {
  method: 'elicitation/create',
  params: { message: 'name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } },
};
const sampling = { method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } };
const roots = { method: 'roots/list', params: {} };

function setup(rules: string[]) {
  const audit: AuditRecord[] = [];
  const e = new Elicitor({
    policy: () => compilePolicy([{ scope: 'flags', allow: rules }]),
    audit: { append: async (r) => void audit.push(r) },
    principal: 'mcp:t',
  });
  return { e, audit };
}

describe('callTakingInput', () => {
  it('a server that ignores the capabilities it was told of and asks anyway is refused E_CAPABILITY_DENIED naming the rule, audited; nothing is relayed', async () => {
    const { e, audit } = setup(['mcp-input(srv/elicitation)']);
    const sent: CallInput[] = [];
    const call = async (i: CallInput) => (sent.push(i), asks({ a: elicitation, b: sampling }));
    await expect(
      callTakingInput(
        e,
        'srv',
        { clientCapabilities: { elicitation: {}, sampling: {} } },
        new AbortController().signal,
        call,
        () => undefined,
      ),
    ).rejects.toMatchObject({
      code: 'E_CAPABILITY_DENIED',
      message: expect.stringContaining('mcp-input(srv/sampling)'),
    });
    // told of elicitation only: the kind a rule relays and the client declared
    expect(sent).toEqual([{ capabilities: { elicitation: {} } }]);
    expect(audit.map((a) => [a.kind, a.target, a.decision, a.code])).toEqual([
      ['mcp-input', 'srv/sampling', 'deny', 'E_CAPABILITY_DENIED'],
    ]);
  });

  it('relays when every request may be relayed and the client declared it; a client without the capability is never relayed to; no mode enables it', async () => {
    const ok = setup(['mcp-input(srv/*)']);
    const r = await callTakingInput(
      ok.e,
      'srv',
      { clientCapabilities: { elicitation: {}, sampling: {} } },
      new AbortController().signal,
      async () => asks({ a: elicitation, b: sampling }),
      () => undefined,
    );
    expect(r).toMatchObject({ resultType: 'input_required', inputRequests: { a: elicitation, b: sampling } });
    expect(ok.audit.map((a) => [a.target, a.decision])).toEqual([
      ['srv/elicitation', 'allow'],
      ['srv/sampling', 'allow'],
    ]);
    const undeclared = setup(['mcp-input(srv/*)']);
    await expect(
      callTakingInput(
        undeclared.e,
        'srv',
        { clientCapabilities: { elicitation: {} } },
        new AbortController().signal,
        async () => asks({ b: sampling }),
        () => undefined,
      ),
    ).rejects.toMatchObject({
      code: 'E_CAPABILITY_DENIED',
      message: expect.stringContaining('nor did the client declare'),
    });
    const unrestricted = new Elicitor({
      policy: () => compilePolicy([{ scope: 'flags', mode: 'unrestricted' }]),
      audit: { append: async () => undefined },
      principal: 'p',
    });
    expect(await unrestricted.inputRule('srv', 'elicitation')).toBeUndefined();
    const denied = new Elicitor({
      policy: () => compilePolicy([{ scope: 'flags', allow: ['mcp-input(*/*)'], deny: ['mcp-input(srv/roots)'] }]),
      audit: { append: async () => undefined },
      principal: 'p',
    });
    expect([await denied.inputRule('srv', 'elicitation'), await denied.inputRule('srv', 'roots')]).toEqual([
      { rule: 'mcp-input(*/*)', scope: 'flags' },
      undefined,
    ]);
  });

  it('a 2025-era client session (no capabilities to relay to) without mcp-elicit: refused', async () => {
    const { e } = setup(['mcp-input(srv/*)']);
    await expect(
      callTakingInput(
        e,
        'srv',
        undefined,
        new AbortController().signal,
        async () => asks({ a: elicitation }),
        () => undefined,
      ),
    ).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED', message: expect.stringContaining('2025-era session') });
  });

  it('answers are checked against the relayed requests: missing or the wrong shape refused, unrelayed keys dropped', () => {
    const keys = { a: 'elicitation/create', r: 'roots/list' };
    expect(
      checkedResponses(keys, {
        a: { action: 'decline' },
        r: { roots: [{ uri: 'file:///x' }] },
        extra: { action: 'accept' },
      }),
    ).toEqual({ a: { action: 'decline' }, r: { roots: [{ uri: 'file:///x' }] } });
    expect(() => checkedResponses(keys, { a: { action: 'decline' } })).toThrow(
      /inputResponses\.r \(roots\/list\) is missing/,
    );
    expect(() => checkedResponses(keys, { a: { action: 'decline' }, r: { roots: [{ uri: 'https://x' }] } })).toThrow(
      /file:/,
    );
    expect(() => checkedResponses({ s: 'sampling/createMessage' }, { s: { method: 'x', result: {} } })).toThrow(
      /bare result/,
    );
  });

  it('an elicitation answer is trimmed to the form the server asked for: unasked fields dropped, wrong types refused', () => {
    const forms = formShapes({
      q: {
        method: 'elicitation/create',
        params: {
          message: 'm',
          requestedSchema: {
            type: 'object',
            properties: {
              colour: { type: 'string', enum: ['red', 'blue'] },
              size: { type: 'integer' },
              agree: { type: 'boolean' },
              tags: { type: 'array', items: { enum: ['a', 'b'] } },
              note: { type: 'string' },
            },
          },
        },
      },
      r: roots,
    });
    expect(forms).toEqual({
      q: {
        colour: { t: 'string', e: ['red', 'blue'] },
        size: { t: 'integer' },
        agree: { t: 'boolean' },
        tags: { t: 'array', e: ['a', 'b'] },
        note: { t: 'string' },
      },
    });
    const keys = { q: 'elicitation/create' };
    const answer = {
      action: 'accept',
      content: { colour: 'red', size: 3, agree: true, tags: ['a'], note: 'hi', ssn: '078-05-1120', __proto__x: 1 },
      _meta: { smuggled: true },
    };
    expect(checkedResponses(keys, { q: answer }, forms)).toEqual({
      q: { action: 'accept', content: { colour: 'red', size: 3, agree: true, tags: ['a'], note: 'hi' } },
    });
    // a decline or cancel carries nothing else to the server
    expect(checkedResponses(keys, { q: { action: 'decline', content: { colour: 'red' } } }, forms)).toEqual({
      q: { action: 'decline' },
    });
    for (const [field, value] of [
      ['colour', 'green'],
      ['size', 1.5],
      ['agree', 'yes'],
      ['tags', ['c']],
      ['note', 7],
    ] as const)
      expect(() => checkedResponses(keys, { q: { action: 'accept', content: { [field]: value } } }, forms)).toThrow(
        expect.objectContaining({ code: 'E_INVALID_ARGS', message: expect.stringContaining(`content.${field}`) }),
      );
  });
});
