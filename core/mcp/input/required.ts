// Multi-round-trip input requests (MCP 2026-07-28 `input_required`) through the bridge: the shape checks of a server's
// input requests and a client's answers, and the bridge's own request state bound to one call; core, trusted side.
//
// Source: MCP 2026-07-28 "Multi round-trip requests" (SEP-2322) and the TypeScript SDK 2.x (`inputRequired`,
// `partitionInputResponses`, `createRequestStateCodec`): a server answers tools/call with `resultType:
// "input_required"`, a map of input requests (elicitation/create, sampling/createMessage, roots/list) and an opaque
// `requestState`; the client retries the same call with `inputResponses` (bare results, by key) and the state echoed.
// The state round-trips through the client, so it is attacker-controlled on re-entry: the bridge never hands the
// server's own state to the client, but a state of its own, sealed (AES-GCM) and bound to the call, used once
// (core/mcp/input/state.ts).

/** The kinds of input a server may ask for, by request method. */
export const INPUT_METHODS: Readonly<Record<string, InputKind>> = Object.assign(
  Object.create(null) as Record<string, InputKind>,
  {
    'elicitation/create': 'elicitation',
    'sampling/createMessage': 'sampling',
    'roots/list': 'roots',
  },
);
export type InputKind = 'elicitation' | 'sampling' | 'roots';

/** Most input requests one answer may carry. */
export const MAX_INPUT_REQUESTS = 16;
/** Longest requestState taken from a server or a client, characters. */
export const MAX_STATE_CHARS = 65_536;
/** How long a state the bridge issued stays valid, ms. */
export const STATE_TTL_MS = 10 * 60_000;
/** Most rounds of one call the bridge answers itself (a person filling in forms) before it refuses. */
export const MAX_ROUNDS = 8;

const KEY_RE = /^[A-Za-z0-9_.:-]{1,128}$/;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface InputRequest {
  method: string;
  params: Record<string, unknown>;
}

/** A server's `input_required` answer, checked. */
export interface InputRequired {
  inputRequests: Record<string, InputRequest>;
  requestState?: string;
}

/**
 * Check a server's `input_required` result: `inputRequests` a map of at most MAX_INPUT_REQUESTS entries whose keys
 * are 1-128 of A-Z a-z 0-9 _ . : - and whose methods are elicitation/create, sampling/createMessage or roots/list
 * (params an object), `requestState` a string of at most MAX_STATE_CHARS; at least one of the two.
 */
export function parseInputRequired(
  result: unknown,
): { ok: true; value: InputRequired } | { ok: false; message: string } {
  if (!isObj(result)) return { ok: false, message: 'the result is not an object' };
  const raw = result.inputRequests ?? {};
  if (!isObj(raw)) return { ok: false, message: '"inputRequests" is not an object' };
  const keys = Object.keys(raw);
  if (keys.length > MAX_INPUT_REQUESTS) return { ok: false, message: `more than ${MAX_INPUT_REQUESTS} input requests` };
  const inputRequests: Record<string, InputRequest> = Object.create(null) as Record<string, InputRequest>;
  for (const k of keys) {
    if (!KEY_RE.test(k)) return { ok: false, message: 'an input request key is not 1-128 of A-Z a-z 0-9 _ . : -' };
    const r = raw[k];
    if (!isObj(r) || typeof r.method !== 'string' || INPUT_METHODS[r.method] === undefined)
      return {
        ok: false,
        message: `input request "${k}" is not elicitation/create, sampling/createMessage or roots/list`,
      };
    if (r.params !== undefined && !isObj(r.params))
      return { ok: false, message: `input request "${k}" has params that are not an object` };
    inputRequests[k] = { method: r.method, params: (r.params as Record<string, unknown> | undefined) ?? {} };
  }
  const state = result.requestState;
  if (state !== undefined && (typeof state !== 'string' || state.length > MAX_STATE_CHARS))
    return { ok: false, message: `"requestState" is not a string of at most ${MAX_STATE_CHARS} characters` };
  if (keys.length === 0 && state === undefined) return { ok: false, message: 'neither inputRequests nor requestState' };
  return { ok: true, value: { inputRequests, ...(state !== undefined ? { requestState: state } : {}) } };
}

const isStrArr = (v: unknown): boolean => Array.isArray(v) && v.length <= 100 && v.every((x) => typeof x === 'string');

/**
 * Check one answer of the client to an input request of `method` (the bare result MCP defines): an ElicitResult
 * (`action` accept / decline / cancel; `content` a flat object of strings, numbers, booleans or string arrays), a
 * CreateMessageResult (`role`, `content` an object or an array of objects, `model` a string), a ListRootsResult
 * (`roots` an array of `{ uri: "file://..." , name? }`, at most 1000). @returns why it does not fit, or undefined.
 */
export function inputResponseProblem(method: string, v: unknown): string | undefined {
  if (!isObj(v) || 'method' in v || 'result' in v) return 'is not a bare result object';
  switch (INPUT_METHODS[method]) {
    case 'elicitation':
      if (v.action !== 'accept' && v.action !== 'decline' && v.action !== 'cancel')
        return 'has no action accept, decline or cancel';
      if (v.content === undefined) return undefined;
      if (!isObj(v.content)) return 'has content that is not an object';
      for (const x of Object.values(v.content))
        if (
          !(
            typeof x === 'string' ||
            typeof x === 'boolean' ||
            (typeof x === 'number' && Number.isFinite(x)) ||
            isStrArr(x)
          )
        )
          return 'has content values other than strings, numbers, booleans or string arrays';
      return undefined;
    case 'sampling':
      if (v.role !== 'assistant' && v.role !== 'user') return 'has no role assistant or user';
      if (typeof v.model !== 'string') return 'has no model';
      if (!(isObj(v.content) || (Array.isArray(v.content) && v.content.every(isObj)))) return 'has no content';
      return undefined;
    case 'roots':
      if (!Array.isArray(v.roots) || v.roots.length > 1000) return 'has no roots array';
      for (const r of v.roots)
        if (
          !isObj(r) ||
          typeof r.uri !== 'string' ||
          !r.uri.startsWith('file://') ||
          (r.name !== undefined && typeof r.name !== 'string')
        )
          return 'has a root that is not { uri: "file://...", name? }';
      return undefined;
    default:
      return 'answers an unknown kind of request';
  }
}
