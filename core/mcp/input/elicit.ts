// MCP elicitation answered by a person: the restricted form schema, answer checks, the question, the rule and the
// audit; core, trusted side.
//
// Follows MCP 2025-11-25 "Elicitation" (https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation):
// form mode only, a flat object of primitive properties (string with optional format / length bounds, number and
// integer with optional bounds, boolean, single-select enum via `enum` + `enumNames` or `oneOf` of `const` +
// `title`), `required`, `default`. The request never reaches the MCP client (or a model): only a person, and only
// when an allow rule `mcp-elicit(SERVER)` says so.
import { TyError } from '../../errors.js';
import type { Asker, AskOutcome } from '../../ask/router.js';
import type { AuditRecord, AuditSink } from '../../audit/trail.js';
import { decide, type Policy } from '../../policy/permissions.js';
import type { FormField, FormValues, Question, QuestionForm } from '../../exec/runtime.js';
import { sanitizeInline } from '../../ask/text.js';

/** Most fields one form may have. */
export const MAX_FORM_FIELDS = 32;
/** Longest server message kept, characters (longer: cut with a marker). */
export const MAX_FORM_MESSAGE = 4000;
/** Longest string value accepted when the schema sets no maxLength, characters. */
export const MAX_STRING_VALUE = 4096;
/** How many times a person is asked again after an answer that does not fit the form. */
export const FORM_ATTEMPTS = 3;

const FIELD_NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const FORMATS = new Set(['email', 'uri', 'date', 'date-time']);
/** Words that mark a field as asking for a secret (its value is never echoed, shown back or logged). */
const SECRET_RE =
  /pass(word|phrase|code)?|secret|token|api[\s_-]?key|private[\s_-]?key|credential|\bpin\b|\botp\b|one[\s_-]?time|2fa|mfa|cvv|cvc|card[\s_-]?number|\bssn\b|social[\s_-]?security|auth/i;

/** MCP's ElicitResult as the bridge sends it back to the server. */
export type ElicitResult = { action: 'accept'; content: FormValues } | { action: 'decline' } | { action: 'cancel' };

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown, max: number): string | undefined =>
  typeof v === 'string' && v.length > 0 ? v.slice(0, max) : undefined;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/**
 * The form a server's `requestedSchema` asks for: only the named properties, each reduced to the keywords
 * the restricted schema defines (anything else a property carries is not kept, so never shown).
 * @returns the fields in the server's order, or why the schema is not one a form can show (nested objects,
 *   arrays, multi-select, more than MAX_FORM_FIELDS fields, a bad name).
 */
export function parseFormSchema(schema: unknown): { ok: true; fields: FormField[] } | { ok: false; message: string } {
  if (!isObj(schema) || (schema.type !== undefined && schema.type !== 'object') || !isObj(schema.properties))
    return { ok: false, message: 'requestedSchema must be an object schema with "properties"' };
  const names = Object.keys(schema.properties);
  if (names.length > MAX_FORM_FIELDS)
    return { ok: false, message: `the form has ${names.length} fields; at most ${MAX_FORM_FIELDS} are shown` };
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [],
  );
  const fields: FormField[] = [];
  for (const name of names) {
    const p = schema.properties[name];
    if (!FIELD_NAME_RE.test(name))
      return {
        ok: false,
        message: `field name "${sanitizeInline(name.slice(0, 64))}" is not 1-64 of A-Z a-z 0-9 _ . -`,
      };
    if (!isObj(p)) return { ok: false, message: `field ${name} has no schema` };
    const f: FormField = { name, type: 'string', required: required.has(name), secret: false };
    const title = str(p.title, 200);
    const description = str(p.description, 600);
    if (title !== undefined) f.title = title;
    if (description !== undefined) f.description = description;
    const options = enumOptions(p);
    if (options === null)
      return { ok: false, message: `field ${name}: only single-select enums of strings are supported` };
    if (p.type === 'string' || options !== undefined) {
      if (p.type !== undefined && p.type !== 'string')
        return { ok: false, message: `field ${name}: an enum must be of type string` };
      if (options !== undefined) f.options = options;
      if (typeof p.format === 'string') {
        if (!FORMATS.has(p.format))
          return {
            ok: false,
            message: `field ${name}: format "${sanitizeInline(p.format.slice(0, 40))}" is not one of email, uri, date, date-time`,
          };
        f.format = p.format as NonNullable<FormField['format']>;
      }
      const minL = num(p.minLength);
      const maxL = num(p.maxLength);
      if (minL !== undefined) f.minLength = minL;
      if (maxL !== undefined) f.maxLength = maxL;
    } else if (p.type === 'number' || p.type === 'integer' || p.type === 'boolean') {
      f.type = p.type;
      const min = num(p.minimum);
      const max = num(p.maximum);
      if (min !== undefined) f.minimum = min;
      if (max !== undefined) f.maximum = max;
    } else
      return {
        ok: false,
        message: `field ${name}: type ${sanitizeInline(String(p.type).slice(0, 40))} is not string, number, integer or boolean`,
      };
    if (p.default !== undefined) {
      const d = checkField(f, p.default);
      if (d.ok) f.default = d.value;
    }
    f.secret = SECRET_RE.test(`${name} ${f.title ?? ''} ${f.description ?? ''}`);
    fields.push(f);
  }
  return { ok: true, fields };
}

/** A single-select enum's options (undefined: not an enum; null: an enum the form cannot show). */
function enumOptions(p: Record<string, unknown>): FormField['options'] | null | undefined {
  if (p.type === 'array' || p.items !== undefined) return null;
  if (Array.isArray(p.enum)) {
    if (p.enum.length === 0 || p.enum.length > 100 || !p.enum.every((v) => typeof v === 'string')) return null;
    const labels = Array.isArray(p.enumNames) ? p.enumNames : [];
    return (p.enum as string[]).map((value, i) =>
      typeof labels[i] === 'string' ? { value, label: (labels[i] as string).slice(0, 200) } : { value },
    );
  }
  const alts = Array.isArray(p.oneOf) ? p.oneOf : Array.isArray(p.anyOf) ? p.anyOf : undefined;
  if (alts === undefined) return undefined;
  if (alts.length === 0 || alts.length > 100 || !alts.every((a) => isObj(a) && typeof a.const === 'string'))
    return null;
  return (alts as Record<string, unknown>[]).map((a) =>
    typeof a.title === 'string'
      ? { value: a.const as string, label: a.title.slice(0, 200) }
      : { value: a.const as string },
  );
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * One value for one field: a typed value, or the text a person typed (numbers parsed, `true`/`false`/`yes`/`no`
 * for booleans, an enum's value or its label). @returns the value as the server gets it, or what is wrong.
 */
export function checkField(
  f: FormField,
  raw: unknown,
): { ok: true; value: string | number | boolean } | { ok: false; message: string } {
  const bad = (why: string) => ({ ok: false as const, message: `${f.name}: ${why}` });
  if (f.type === 'boolean') {
    if (typeof raw === 'boolean') return { ok: true, value: raw };
    const t = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
    if (t === 'true' || t === 'yes' || t === 'y') return { ok: true, value: true };
    if (t === 'false' || t === 'no' || t === 'n') return { ok: true, value: false };
    return bad('expected yes or no (true or false)');
  }
  if (f.type === 'number' || f.type === 'integer') {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw.trim()) : NaN;
    if (!Number.isFinite(n)) return bad(`expected ${f.type === 'integer' ? 'a whole number' : 'a number'}`);
    if (f.type === 'integer' && !Number.isInteger(n)) return bad('expected a whole number');
    if (f.minimum !== undefined && n < f.minimum) return bad(`must be at least ${f.minimum}`);
    if (f.maximum !== undefined && n > f.maximum) return bad(`must be at most ${f.maximum}`);
    return { ok: true, value: n };
  }
  if (typeof raw !== 'string') return bad('expected text');
  if (f.options !== undefined) {
    const hit =
      f.options.find((o) => o.value === raw) ?? f.options.find((o) => o.label !== undefined && o.label === raw);
    return hit
      ? { ok: true, value: hit.value }
      : bad(
          `expected one of ${f.options
            .map((o) => o.value)
            .join(', ')
            .slice(0, 300)}`,
        );
  }
  const len = [...raw].length;
  if (len > (f.maxLength ?? MAX_STRING_VALUE)) return bad(`at most ${f.maxLength ?? MAX_STRING_VALUE} characters`);
  if (f.minLength !== undefined && len < f.minLength) return bad(`at least ${f.minLength} characters`);
  if (f.format === 'email' && !EMAIL_RE.test(raw)) return bad('expected an email address');
  if (f.format === 'uri' && !/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(raw)) return bad('expected a URI');
  if (f.format === 'date' && !(DATE_RE.test(raw) && !Number.isNaN(Date.parse(raw))))
    return bad('expected a date YYYY-MM-DD');
  if (f.format === 'date-time' && !(/^\d{4}-\d{2}-\d{2}T/.test(raw) && !Number.isNaN(Date.parse(raw))))
    return bad('expected a date and time (ISO 8601)');
  return { ok: true, value: raw };
}

/**
 * A whole answer against the form: unknown field names refused, each value checked (checkField), a missing
 * field takes its default, a missing required field without one is an error.
 */
export function checkFormValues(
  form: Pick<QuestionForm, 'fields'>,
  raw: unknown,
): { ok: true; values: FormValues } | { ok: false; message: string } {
  const given = isObj(raw) ? raw : {};
  const known = new Set(form.fields.map((f) => f.name));
  for (const k of Object.keys(given))
    if (!known.has(k)) return { ok: false, message: `the form has no field "${sanitizeInline(k.slice(0, 64))}"` };
  const values: FormValues = {};
  for (const f of form.fields) {
    const v = Object.prototype.hasOwnProperty.call(given, f.name) ? given[f.name] : undefined;
    if (v === undefined || v === '') {
      if (f.default !== undefined) values[f.name] = f.default;
      else if (f.required) return { ok: false, message: `${f.name}: required` };
      continue;
    }
    const c = checkField(f, v);
    if (!c.ok) return c;
    values[f.name] = c.value;
  }
  return { ok: true, values };
}

/**
 * One display line per field: `NAME (type, required): title — description [choices] [default]`; a secret field's
 * default is not shown.
 */
export function fieldLine(f: FormField): string {
  const kind = f.options ? 'choice' : (f.format ?? f.type);
  const parts = [`${f.name} (${kind}${f.required ? ', required' : ''}${f.secret ? ', looks secret' : ''})`];
  const text = [f.title, f.description].filter((x): x is string => x !== undefined).join(' — ');
  const choices = f.options
    ? ` [one of: ${f.options.map((o) => (o.label !== undefined && o.label !== o.value ? `${o.value} (${o.label})` : o.value)).join(', ')}]`
    : '';
  const bounds = [
    f.minimum !== undefined ? `≥ ${f.minimum}` : '',
    f.maximum !== undefined ? `≤ ${f.maximum}` : '',
    f.minLength !== undefined ? `≥ ${f.minLength} chars` : '',
    f.maxLength !== undefined ? `≤ ${f.maxLength} chars` : '',
  ]
    .filter(Boolean)
    .join(', ');
  const dflt = f.default !== undefined && !f.secret ? ` [default: ${String(f.default)}]` : '';
  return `${parts[0]}${text ? `: ${text}` : ''}${choices}${bounds ? ` [${bounds}]` : ''}${dflt}`;
}

/**
 * The question for one elicitation: the server, its message and one line per named field; answered once, never
 * remembered.
 */
export function formQuestion(id: string, server: string, form: QuestionForm, rule: string): Question {
  return {
    id,
    title: `MCP server ${server} asks you for input`,
    details: [
      `server: ${server}`,
      'the server wrote (its words, not checked):',
      ...form.message
        .split(/\r?\n/)
        .slice(0, 20)
        .map((l) => `  ${l}`),
      'fields:',
      ...form.fields.map((f) => `  ${fieldLine(f)}`),
      'your answer goes to this server only, never to the MCP client or a model',
      `shown because: allow rule ${rule}`,
    ],
    scopes: ['once'],
    form,
    facts: { tool: server, revision: `mcp:${server}`, capability: 'mcp-elicit', target: server, rememberable: false },
  };
}

export interface ElicitorDeps {
  /** The current rules (settings may change between requests). */
  policy: () => Policy | Promise<Policy>;
  /**
   * Asks a person (core/ask/router.ts AskRouter; only channels that show forms are asked). Without one, every form is
   * declined at once.
   */
  asker?: Asker;
  audit: AuditSink;
  /** Who is acting (`mcp:CLIENT`), for the audit. */
  principal: string;
  newId?: () => string;
  clock?: () => number;
}

/**
 * Elicitation requests of bridged servers, answered by a person. Per request: the current rules must hold an
 * allow rule `mcp-elicit(SERVER)` and no deny rule matching (no mode enables it; without one the request is
 * refused with E_CAPABILITY_DENIED); the schema must be a form (parseFormSchema; else E_INVALID_ARGS); then the
 * person is asked (the server's message sanitized on display, only the named fields) and the answer checked
 * against the form (asked again up to FORM_ATTEMPTS times). accept / decline / cancel map to MCP's actions;
 * nobody able to answer is a decline at once, no answer in time or a cancelled call a cancel. Every request is
 * audited (kind `mcp-elicit`, the server, the field names and the action; never a value).
 */
export class Elicitor {
  constructor(private readonly d: ElicitorDeps) {}

  /**
   * Whether the current rules let SERVER's elicitations reach a person (for declaring the capability at session start).
   */
  async enabledFor(server: string): Promise<boolean> {
    return (await this.rule(server)) !== undefined;
  }

  private async rule(server: string): Promise<{ rule: string; scope: string } | undefined> {
    const dec = decide(await this.d.policy(), {
      kind: 'mcp-elicit',
      toolName: server,
      revision: `mcp:${server}`,
      target: server,
      requested: true,
    });
    return dec.effect === 'allow' && dec.trace.list === 'allow'
      ? { rule: dec.trace.rule, scope: dec.trace.scope }
      : undefined;
  }

  /**
   * Answer one `elicitation/create` of SERVER (params as the server sent them).
   * @throws TyError E_CAPABILITY_DENIED (no rule allows it), E_INVALID_ARGS (not a form mode request or not a form
   *   schema), E_STORE (the audit record could not be written).
   */
  async elicit(server: string, params: unknown, signal?: AbortSignal): Promise<ElicitResult> {
    const t0 = this.now();
    const p = isObj(params) ? params : {};
    const rule = await this.rule(server);
    if (rule === undefined) {
      await this.audit(
        server,
        t0,
        {
          decision: 'deny',
          rule: `no allow rule mcp-elicit(${server})`,
          list: 'mode',
          scope: 'default',
          outcome: 'denied',
          code: 'E_CAPABILITY_DENIED',
        },
        { action: 'refused', fields: [] },
      );
      throw new TyError(
        'E_CAPABILITY_DENIED',
        `elicitation from ${server} was refused: no allow rule shows it to a person; the rule that would: mcp-elicit(${server})`,
        { suggestedRule: `mcp-elicit(${server})` },
      );
    }
    const parsed =
      p.mode !== undefined && p.mode !== 'form'
        ? {
            ok: false as const,
            message: `mode "${sanitizeInline(String(p.mode).slice(0, 20))}" is not offered (form only)`,
          }
        : parseFormSchema(p.requestedSchema);
    if (!parsed.ok) {
      await this.audit(
        server,
        t0,
        {
          decision: 'deny',
          rule: rule.rule,
          list: 'allow',
          scope: rule.scope,
          outcome: 'denied',
          code: 'E_INVALID_ARGS',
        },
        { action: 'refused', fields: [], reason: 'unsupported-schema' },
      );
      throw new TyError('E_INVALID_ARGS', `elicitation from ${server} was refused: ${parsed.message}`);
    }
    const message =
      typeof p.message === 'string'
        ? p.message.length > MAX_FORM_MESSAGE
          ? `${p.message.slice(0, MAX_FORM_MESSAGE)}… [cut]`
          : p.message
        : '';
    const form: QuestionForm = { message, fields: parsed.fields };
    const names = form.fields.map((f) => f.name);
    const secret = form.fields.filter((f) => f.secret).map((f) => f.name);
    const done = async (result: ElicitResult, o: { channel?: string; reason?: string }): Promise<ElicitResult> => {
      const fields: ElicitAudit = {
        action: result.action,
        fields: names,
        ...(secret.length ? { secret } : {}),
        ...(o.reason ? { reason: o.reason } : {}),
      };
      await this.audit(
        server,
        t0,
        {
          decision: 'allow',
          rule: rule.rule,
          list: 'allow',
          scope: rule.scope,
          outcome: result.action === 'accept' ? 'ok' : 'denied',
          ...(o.channel ? { channel: o.channel } : {}),
        },
        fields,
      );
      return result;
    };
    if (this.d.asker === undefined) return done({ action: 'decline' }, { reason: 'no-channel' });
    const q = formQuestion(this.d.newId?.() ?? globalThis.crypto.randomUUID(), server, form, rule.rule);
    for (let attempt = 1; ; attempt++) {
      let out: AskOutcome & { values?: FormValues; dismissed?: boolean };
      try {
        out = await this.d.asker.ask(q, signal);
      } catch {
        out = { allow: false, reason: 'refused' };
      }
      if (signal?.aborted) return done({ action: 'cancel' }, { reason: 'aborted' });
      if (!out.allow) {
        if (out.reason === 'no-channel') return done({ action: 'decline' }, { reason: 'no-channel' });
        if (out.reason === 'timeout' || out.reason === 'aborted' || out.dismissed === true)
          return done(
            { action: 'cancel' },
            {
              reason: out.reason === 'refused' ? 'dismissed' : out.reason,
              ...(out.channel ? { channel: out.channel } : {}),
            },
          );
        return done({ action: 'decline' }, out.channel ? { channel: out.channel } : {});
      }
      const checked = checkFormValues(form, out.values ?? {});
      if (checked.ok) return done({ action: 'accept', content: checked.values }, { channel: out.channel });
      if (attempt >= FORM_ATTEMPTS)
        return done({ action: 'decline' }, { channel: out.channel, reason: 'invalid-answer' });
      // asked again with what was wrong (never the value given)
      q.id = this.d.newId?.() ?? globalThis.crypto.randomUUID();
      q.details = [
        ...q.details.filter((l) => !l.startsWith('previous answer not accepted:')),
        `previous answer not accepted: ${checked.message}; answer again (${FORM_ATTEMPTS - attempt} more tries)`,
      ];
    }
  }

  /**
   * The allow rule that lets SERVER's input requests of KIND (`elicitation`, `sampling`, `roots`) be relayed to the
   * MCP client: `mcp-input(SERVER/KIND)` with no deny rule matching (no mode enables it). Undefined: not relayed.
   */
  async inputRule(server: string, kind: string): Promise<{ rule: string; scope: string } | undefined> {
    const dec = decide(await this.d.policy(), {
      kind: 'mcp-input',
      toolName: server,
      revision: `mcp:${server}`,
      target: `${server}/${kind}`,
      requested: true,
    });
    return dec.effect === 'allow' && dec.trace.list === 'allow'
      ? { rule: dec.trace.rule, scope: dec.trace.scope }
      : undefined;
  }

  /**
   * Audit one input request of SERVER relayed to the MCP client, or refused (kind `mcp-input`, target SERVER/KIND;
   * never the request's text or the client's answer).
   * @throws TyError E_STORE when the record cannot be written (the relay is then refused).
   */
  async auditInput(
    server: string,
    kind: string,
    v: Pick<AuditRecord, 'decision' | 'rule' | 'list' | 'scope' | 'outcome'> & { code?: AuditRecord['code'] },
  ): Promise<void> {
    const rec: AuditRecord = {
      v: 1,
      time: new Date(this.now()).toISOString(),
      principal: this.d.principal,
      tool: server,
      revision: `mcp:${server}`,
      kind: 'mcp-input',
      target: `${server}/${kind}`,
      durationMs: 0,
      ...v,
    };
    try {
      await this.d.audit.append(rec);
    } catch (e) {
      throw new TyError(
        'E_STORE',
        `the audit record of an input request from ${server} could not be written; it was refused (${e instanceof TyError ? e.code : 'E_STORE'})`,
      );
    }
  }

  private now(): number {
    return this.d.clock?.() ?? Date.now();
  }

  private async audit(
    server: string,
    t0: number,
    v: Pick<AuditRecord, 'decision' | 'rule' | 'list' | 'scope' | 'outcome'> & {
      code?: AuditRecord['code'];
      channel?: string;
    },
    elicit: ElicitAudit,
  ): Promise<void> {
    const rec: AuditRecord = {
      v: 1,
      time: new Date(this.now()).toISOString(),
      principal: this.d.principal,
      tool: server,
      revision: `mcp:${server}`,
      kind: 'mcp-elicit',
      target: server,
      durationMs: Math.max(0, this.now() - t0),
      ...v,
      elicit,
    };
    try {
      await this.d.audit.append(rec);
    } catch (e) {
      throw new TyError(
        'E_STORE',
        `the audit record of an elicitation from ${server} could not be written; it was refused (${e instanceof TyError ? e.code : 'E_STORE'})`,
      );
    }
  }
}

/**
 * What the audit keeps of one elicitation: the action, the field names asked (and which look secret), why it ended so.
 * Never a value.
 */
export type ElicitAudit = NonNullable<AuditRecord['elicit']>;
