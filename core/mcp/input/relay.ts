// The bridge's side of multi-round-trip input requests (MCP 2026-07-28 `input_required`): which of a server's input
// requests reach the client, which a person answers, which are refused; core, trusted side.
//
// The rules (SECURITY.md, docs/mcp.md): a server's request for input reaches the MCP client only where an allow rule
// `mcp-input(SERVER/KIND)` says so and the client declared that capability on the request; elicitation is answered by
// a person where `mcp-elicit(SERVER)` says so (the answer goes to the server only); anything else is refused with
// E_CAPABILITY_DENIED. Every relay and refusal is audited (kind `mcp-input` or `mcp-elicit`).
import { TyError } from '../../errors.js';
import type { BridgeOptions } from '../bridge/context.js';
import { INPUT_METHODS, MAX_ROUNDS, inputResponseProblem, type InputKind, type InputRequest } from './required.js';
import type { FieldShape } from './state.js';
import type { CallInput, InputRequiredAnswer } from '../upstream/session.js';

/**
 * What a call of a client that can take input brings: what it declared, and (a retry) its answers with the server's
 * state.
 */
export interface CallRound {
  /**
   * The client's capabilities as it declared them on this request (a 2026-07-28 client); undefined: it cannot take
   * input.
   */
  clientCapabilities?: Record<string, unknown>;
  responses?: Record<string, unknown>;
  upstreamState?: string;
  /** A retry that answers a 2025-era server's call the bridge holds open (core/mcp/input/suspend.ts). */
  suspension?: string;
}

/** Input requests to relay to the client: the server's, and its own state (never shown to the client as it is). */
export interface RelayedInput {
  resultType: 'input_required';
  inputRequests: Record<string, InputRequest>;
  upstreamState?: string;
  /** A 2025-era server's call held open (core/mcp/input/suspend.ts), by id. */
  suspension?: string;
}

export const isRelayed = (v: unknown): v is RelayedInput =>
  typeof v === 'object' && v !== null && (v as { resultType?: unknown }).resultType === 'input_required';

const KINDS: readonly InputKind[] = ['elicitation', 'sampling', 'roots'];

/**
 * Run one forwarded call of SERVER that may take input, round after round: `call` sends it with the capabilities
 * this call may use (the kinds a rule relays and the client declared; form elicitation when a person may answer)
 * and the answers of the last round. A server's `input_required` answer is relayed to the client when every input
 * request in it may be (returned as a RelayedInput, audited per request); else, when every one is an elicitation
 * and `mcp-elicit(SERVER)` lets a person answer, the person answers (the Elicitor asks and audits) and the call is
 * sent again, at most MAX_ROUNDS times; else it is refused.
 * @throws TyError E_CAPABILITY_DENIED (an input request no rule lets through; audited), the Elicitor's codes, what
 *   `call` throws.
 */
export async function callTakingInput(
  elicit: BridgeOptions['elicit'],
  server: string,
  round: CallRound | undefined,
  signal: AbortSignal,
  call: (input: CallInput) => Promise<unknown>,
  log: (outcome: string) => void,
): Promise<unknown> {
  const declared = round?.clientCapabilities;
  const relay = new Map<InputKind, { rule: string; scope: string }>();
  if (declared !== undefined && elicit?.inputRule !== undefined) {
    for (const k of KINDS) {
      if (declared[k] === undefined) continue;
      const r = await elicit.inputRule(server, k);
      if (r !== undefined) relay.set(k, r);
    }
  }
  const person = elicit !== undefined && (await elicit.enabledFor(server).catch(() => false));
  const capabilities: Record<string, unknown> = {};
  for (const k of relay.keys()) capabilities[k] = declared?.[k] ?? {};
  if (person && capabilities.elicitation === undefined) capabilities.elicitation = { form: {} };
  let responses = round?.responses;
  let requestState = round?.upstreamState;
  for (let n = 0; ; n++) {
    const r = await call({
      capabilities,
      ...(responses !== undefined ? { responses } : {}),
      ...(requestState !== undefined ? { requestState } : {}),
    });
    if (!isRelayed(r)) return r;
    const answer = r as InputRequiredAnswer;
    const entries = Object.entries(answer.inputRequests);
    const kinds = entries.map(([, q]) => INPUT_METHODS[q.method]!);
    if (declared !== undefined && kinds.every((k) => relay.has(k))) {
      for (const k of new Set(kinds)) {
        const rule = relay.get(k)!;
        await elicit!.auditInput?.(server, k, {
          decision: 'allow',
          rule: rule.rule,
          list: 'allow',
          scope: rule.scope,
          outcome: 'ok',
        });
      }
      log(`input-required:${[...new Set(kinds)].join('+') || 'state'}`);
      return {
        resultType: 'input_required',
        inputRequests: answer.inputRequests,
        ...(answer.requestState !== undefined ? { upstreamState: answer.requestState } : {}),
      } satisfies RelayedInput;
    }
    // requestState only (the server sheds load): sent again with its state
    if (declared === undefined && entries.length === 0 && n < MAX_ROUNDS) {
      responses = undefined;
      requestState = answer.requestState;
      continue;
    }
    if (person && entries.length > 0 && kinds.every((k) => k === 'elicitation') && n < MAX_ROUNDS) {
      const next: Record<string, unknown> = {};
      for (const [key, q] of entries) next[key] = await elicit!.elicit(server, q.params, signal);
      responses = next;
      requestState = answer.requestState;
      continue;
    }
    const refused =
      entries.length === 0
        ? undefined
        : (kinds.find((k) => !relay.has(k) && !(person && k === 'elicitation')) ?? kinds[0]);
    const kind = refused ?? 'elicitation';
    const suggested = `mcp-input(${server}/${kind})`;
    await elicit?.auditInput?.(server, kind, {
      decision: 'deny',
      rule: `no allow rule ${suggested}`,
      list: 'mode',
      scope: 'default',
      outcome: 'denied',
      code: 'E_CAPABILITY_DENIED',
    });
    log(`refused-input:${kind}`);
    const why =
      n >= MAX_ROUNDS
        ? `it asked for input more than ${MAX_ROUNDS} times`
        : declared === undefined
          ? 'this client cannot take input requests (a 2025-era session) and no person may answer them'
          : `no rule lets its ${kind} request reach the MCP client${declared[kind] === undefined ? ' (nor did the client declare that capability)' : ''}`;
    throw new TyError(
      'E_CAPABILITY_DENIED',
      `server "${server}" asked for input (${kind}) and was refused: ${why}; the rule that would relay it: ${suggested}`,
      { suggestedRule: suggested },
    );
  }
}

/**
 * A retry's answers checked against the input requests the bridge relayed (`keys`: key -> method): each must be there
 * and be the bare result its method defines (core/mcp/input/required.ts inputResponseProblem); keys the bridge did not
 * relay are dropped, and an elicitation's answer is trimmed to the form the server asked for (`forms`, from
 * formShapes; trimElicitation). @throws TyError E_INVALID_ARGS naming the key and what is wrong.
 */
export function checkedResponses(
  keys: Record<string, string>,
  given: Record<string, unknown> | undefined,
  forms: Record<string, Record<string, FieldShape>> = {},
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, method] of Object.entries(keys)) {
    const v = given !== undefined && Object.prototype.hasOwnProperty.call(given, k) ? given[k] : undefined;
    const problem = v === undefined ? 'is missing' : inputResponseProblem(method, v);
    if (problem !== undefined) throw new TyError('E_INVALID_ARGS', `inputResponses.${k} (${method}) ${problem}`);
    out[k] = method === 'elicitation/create' ? trimElicitation(k, forms[k] ?? {}, v) : v;
  }
  return out;
}

/** The client capabilities (as it declared them) that the relayed input requests need. */
export function relayedCapabilities(r: RelayedInput, declared: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const q of Object.values(r.inputRequests)) {
    const k = INPUT_METHODS[q.method];
    if (k !== undefined && declared[k] !== undefined) out[k] = declared[k];
  }
  return out;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** The string values a schema lists: `enum`, or `oneOf` / `anyOf` of `const` (at most 100, else none). */
function listed(p: unknown): string[] | undefined {
  if (!isObj(p)) return undefined;
  const alts = Array.isArray(p.enum)
    ? p.enum
    : Array.isArray(p.oneOf)
      ? p.oneOf.map((a) => (isObj(a) ? a.const : undefined))
      : Array.isArray(p.anyOf)
        ? p.anyOf.map((a) => (isObj(a) ? a.const : undefined))
        : undefined;
  if (alts === undefined || alts.length === 0 || alts.length > 100) return undefined;
  return alts.every((v) => typeof v === 'string') ? (alts as string[]) : undefined;
}

/**
 * The shape of each elicitation form among the relayed input requests (MCP 2025-11-25 "Elicitation", the restricted
 * `requestedSchema`: a flat object of string, number, integer, boolean and enum properties, multi-select as an array
 * of enum strings), key -> field -> shape, so the client's answer can be trimmed to it (trimElicitation). A property of
 * a type outside that form is kept as `any`.
 */
export function formShapes(inputRequests: Record<string, InputRequest>): Record<string, Record<string, FieldShape>> {
  const out: Record<string, Record<string, FieldShape>> = {};
  for (const [key, q] of Object.entries(inputRequests)) {
    if (q.method !== 'elicitation/create') continue;
    const schema = q.params.requestedSchema;
    const props = isObj(schema) && isObj(schema.properties) ? schema.properties : {};
    const fields: Record<string, FieldShape> = {};
    for (const [name, p] of Object.entries(props)) {
      const type = isObj(p) ? p.type : undefined;
      const t: FieldShape['t'] =
        type === 'string' || type === 'number' || type === 'integer' || type === 'boolean' || type === 'array'
          ? type
          : listed(p) !== undefined
            ? 'string'
            : 'any';
      const e = t === 'array' ? listed(isObj(p) ? p.items : undefined) : listed(p);
      fields[name] = e !== undefined && (t === 'string' || t === 'array') ? { t, e } : { t };
    }
    out[key] = fields;
  }
  return out;
}

/**
 * A client's answer to a relayed elicitation trimmed to the form the server asked for (`fields`, from formShapes):
 * only `action`, and with `accept` only the `content` fields the form names; a field of the wrong type or outside
 * its listed values is refused. A decline or cancel carries no content (MCP "Elicitation": content only with
 * accept), so whatever else the client put there never reaches the server.
 * @throws TyError E_INVALID_ARGS naming the key and the field.
 */
export function trimElicitation(key: string, fields: Record<string, FieldShape>, answer: unknown): unknown {
  const a = answer as { action: string; content?: Record<string, unknown> };
  if (a.action !== 'accept') return { action: a.action };
  const content: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(a.content ?? {})) {
    if (!Object.prototype.hasOwnProperty.call(fields, name)) continue;
    const f = fields[name] as FieldShape;
    const fits =
      f.t === 'any' ||
      (f.t === 'string' && typeof v === 'string' && (f.e === undefined || f.e.includes(v))) ||
      (f.t === 'number' && typeof v === 'number' && Number.isFinite(v)) ||
      (f.t === 'integer' && typeof v === 'number' && Number.isInteger(v)) ||
      (f.t === 'boolean' && typeof v === 'boolean') ||
      (f.t === 'array' &&
        Array.isArray(v) &&
        v.every((x) => typeof x === 'string' && (f.e === undefined || f.e.includes(x))));
    if (!fits)
      throw new TyError(
        'E_INVALID_ARGS',
        `inputResponses.${key} (elicitation/create): content.${name.slice(0, 64)} is not ${f.e ? `one of the listed ${f.t === 'array' ? 'choices' : 'values'}` : `a ${f.t}`} as the form asks`,
      );
    content[name] = v;
  }
  return { action: 'accept', content };
}
