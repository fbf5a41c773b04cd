// Unit tests of the person-answered elicitation: the restricted form schema, answer checks, rules, re-asking, the
// audit; core, test side.
import { describe, expect, it } from 'vitest';
import { AskRouter } from '../../ask/router.js';
import type { AuditRecord } from '../../audit/trail.js';
import { compilePolicy, parseRule } from '../../policy/permissions.js';
import type { Answer, AskChannel, Question } from '../../exec/runtime.js';
import { Elicitor, checkFormValues, parseFormSchema } from './elicit.js';

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name', minLength: 2, 'x-extra': 'HIDDEN' },
    age: { type: 'integer', minimum: 0 },
    ok: { type: 'boolean', default: true },
    color: {
      type: 'string',
      oneOf: [
        { const: 'r', title: 'Red' },
        { const: 'g', title: 'Green' },
      ],
    },
    password: { type: 'string' },
  },
  required: ['name', 'age'],
};

/** A person who answers each form question with the next of `answers` (undefined: gives up on this channel). */
class Person implements AskChannel {
  readonly name = 'scripted';
  asked: Question[] = [];
  constructor(
    private readonly answers: (Partial<Answer> | undefined)[],
    readonly forms = true,
  ) {}
  live(): boolean {
    return true;
  }
  async ask(q: Question): Promise<Answer | undefined> {
    this.asked.push(JSON.parse(JSON.stringify(q)) as Question);
    const a = this.answers.shift();
    return a === undefined ? undefined : { allow: false, scope: 'once', channel: this.name, ...a };
  }
}

function elicitor(rules: string[], channels: AskChannel[], askWaitMs = 5000): { e: Elicitor; audit: AuditRecord[] } {
  const audit: AuditRecord[] = [];
  const e = new Elicitor({
    policy: () => compilePolicy([{ scope: 'flags', allow: rules }]),
    asker: new AskRouter({ channels, askWaitMs }),
    audit: { append: async (r) => void audit.push(r) },
    principal: 'mcp:test',
  });
  return { e, audit };
}

const params = { mode: 'form', message: 'Tell me\u001b[2J', requestedSchema: SCHEMA };

describe('the restricted form schema', () => {
  it('keeps only the named fields and the keywords of the restricted schema; marks secret-looking fields', () => {
    const r = parseFormSchema(SCHEMA);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.fields.map((f) => f.name)).toEqual(['name', 'age', 'ok', 'color', 'password']);
    expect(JSON.stringify(r.fields)).not.toContain('HIDDEN');
    expect(r.fields.find((f) => f.name === 'color')?.options).toEqual([
      { value: 'r', label: 'Red' },
      { value: 'g', label: 'Green' },
    ]);
    expect(r.fields.filter((f) => f.secret).map((f) => f.name)).toEqual(['password']);
  });

  it('refuses nested objects, arrays (multi-select), unknown types and bad names', () => {
    expect(parseFormSchema({ type: 'object', properties: { a: { type: 'object' } } }).ok).toBe(false);
    expect(parseFormSchema({ type: 'object', properties: { a: { type: 'array', items: { enum: ['x'] } } } }).ok).toBe(
      false,
    );
    expect(parseFormSchema({ type: 'object', properties: { 'a b': { type: 'string' } } }).ok).toBe(false);
    expect(parseFormSchema({ type: 'object' }).ok).toBe(false);
  });

  it('checks answers: types, bounds, enums, required, unknown fields; defaults filled in', () => {
    const r = parseFormSchema(SCHEMA);
    if (!r.ok) throw new Error('schema');
    expect(checkFormValues(r, { name: 'Al', age: '7', color: 'Green' })).toEqual({
      ok: true,
      values: { name: 'Al', age: 7, ok: true, color: 'g' },
    });
    expect(checkFormValues(r, { name: 'Al', age: '7.5' })).toMatchObject({
      ok: false,
      message: 'age: expected a whole number',
    });
    expect(checkFormValues(r, { name: 'A', age: 1 })).toMatchObject({
      ok: false,
      message: 'name: at least 2 characters',
    });
    expect(checkFormValues(r, { age: 1 })).toMatchObject({ ok: false, message: 'name: required' });
    expect(checkFormValues(r, { name: 'Al', age: 1, color: 'blue' })).toMatchObject({ ok: false });
    expect(checkFormValues(r, { name: 'Al', age: 1, x: 1 })).toMatchObject({
      ok: false,
      message: 'the form has no field "x"',
    });
  });

  it('mcp-elicit(SERVER) is a rule kind with a server glob', () => {
    expect(
      parseRule('mcp-elicit(git*)').matches({
        kind: 'mcp-elicit',
        toolName: 'github',
        revision: 'mcp:github',
        target: 'github',
      }),
    ).toBe(true);
    expect(
      parseRule('mcp-elicit(git*)').matches({
        kind: 'mcp',
        toolName: 'github',
        revision: 'mcp:github',
        target: 'github/x',
      }),
    ).toBe(false);
    expect(() => parseRule('mcp-elicit(a/b)')).toThrow(/mcp-elicit\(SERVER\)/);
  });
});

describe('Elicitor', () => {
  it('no allow rule: refused, nobody asked, audited; no mode enables it', async () => {
    const p = new Person([{ allow: true, values: { name: 'Al', age: 1 } }]);
    const { e, audit } = elicitor([], [p]);
    await expect(e.elicit('srv', params)).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
    const u = new Elicitor({
      policy: () => compilePolicy([{ scope: 'flags', mode: 'unrestricted' }]),
      audit: { append: async () => undefined },
      principal: 'p',
    });
    expect(await u.enabledFor('srv')).toBe(false);
    expect(p.asked).toHaveLength(0);
    expect(audit[0]).toMatchObject({ kind: 'mcp-elicit', decision: 'deny', elicit: { action: 'refused' } });
    // a deny rule beats the allow rule
    const d = new Elicitor({
      policy: () => compilePolicy([{ scope: 'flags', allow: ['mcp-elicit(*)'], deny: ['mcp-elicit(srv)'] }]),
      audit: { append: async () => undefined },
      principal: 'p',
    });
    expect(await d.enabledFor('srv')).toBe(false);
  });

  it('an answer that does not fit is asked again with what was wrong, then accepted; values never in the audit', async () => {
    const p = new Person([
      { allow: true, values: { name: 'Al', age: 'x' } },
      { allow: true, values: { name: 'Al', age: '3', password: 'hunter2-xyz' } },
    ]);
    const { e, audit } = elicitor(['mcp-elicit(srv)'], [p]);
    expect(await e.elicit('srv', params)).toEqual({
      action: 'accept',
      content: { name: 'Al', age: 3, ok: true, password: 'hunter2-xyz' },
    });
    expect(p.asked).toHaveLength(2);
    expect(p.asked[1]!.details.at(-1)).toBe(
      'previous answer not accepted: age: expected a whole number; answer again (2 more tries)',
    );
    expect(JSON.stringify(audit)).not.toContain('hunter2');
    expect(audit).toEqual([
      expect.objectContaining({
        outcome: 'ok',
        channel: 'scripted',
        elicit: { action: 'accept', fields: ['name', 'age', 'ok', 'color', 'password'], secret: ['password'] },
      }),
    ]);
  });

  it('three answers that do not fit: declined; a refusal is decline, a dismissal cancel', async () => {
    const bad = { allow: true, values: { age: 1 } };
    expect(await elicitor(['mcp-elicit(srv)'], [new Person([bad, bad, bad])]).e.elicit('srv', params)).toEqual({
      action: 'decline',
    });
    expect(await elicitor(['mcp-elicit(srv)'], [new Person([{ allow: false }])]).e.elicit('srv', params)).toEqual({
      action: 'decline',
    });
    expect(
      await elicitor(['mcp-elicit(srv)'], [new Person([{ allow: false, dismissed: true }])]).e.elicit('srv', params),
    ).toEqual({ action: 'cancel' });
  });

  it('only channels that show forms are asked; with none, declined at once', async () => {
    const plain = new Person([{ allow: true }], false);
    const { e, audit } = elicitor(['mcp-elicit(srv)'], [plain]);
    expect(await e.elicit('srv', params)).toEqual({ action: 'decline' });
    expect(plain.asked).toHaveLength(0);
    expect(audit[0]).toMatchObject({ elicit: { action: 'decline', reason: 'no-channel' } });
  });

  it('a request that is not form mode or not a flat form is refused with E_INVALID_ARGS', async () => {
    const { e } = elicitor(['mcp-elicit(srv)'], [new Person([])]);
    await expect(e.elicit('srv', { mode: 'url', url: 'https://x.example', message: 'm' })).rejects.toMatchObject({
      code: 'E_INVALID_ARGS',
    });
    await expect(
      e.elicit('srv', { message: 'm', requestedSchema: { type: 'object', properties: { a: { type: 'object' } } } }),
    ).rejects.toMatchObject({ code: 'E_INVALID_ARGS' });
  });
});
