// Permission engine: rule parser, matcher, scope merge and decisions with a trace; core, trusted side (pure).
import { TyError } from '../errors.js';
import { nearest } from '../nearest.js';
import type { GateRequest } from '../exec/runtime.js';

/**
 * Modes set the default for a request no rule or remembered answer decides:
 * - `strict`: ask for everything (tool invocations included).
 * - `standard` (default): tool invocations and the low-risk capabilities `storage`, `subtasks`, `resolve`
 *   are allowed (still inside the manifest's upper bound); `fetch`, `secret`, `mcp`, `mcp-resource`,
 *   `mcp-prompt`, `popup`, `python` ask; of registration requests (kind `registry`), `connect`, `add` and `read` are
 * allowed,
 *   `activate` (moving an active binding) and `remove` ask.
 * - `unrestricted`: allow everything not denied and not matched by an `alwaysAsk` rule.
 * No mode widens the manifest's upper bound, and none overrides a deny rule.
 */
export const PERMISSION_MODES = ['strict', 'standard', 'unrestricted'] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];
export const DEFAULT_MODE: PermissionMode = 'standard';

export const RULE_LISTS = ['deny', 'alwaysAsk', 'allow', 'ask'] as const;
export type RuleList = (typeof RULE_LISTS)[number];

/** Rule scopes, highest precedence first (mode is taken from the first scope that sets one). */
export const SCOPES = ['flags', 'session', 'local', 'project', 'user'] as const;
export type Scope = (typeof SCOPES)[number];

export type RuleKind = GateRequest['kind'];
const RULE_KINDS: readonly RuleKind[] = [
  'tool',
  'fetch',
  'storage',
  'secret',
  'subtasks',
  'resolve',
  'mcp',
  'mcp-resource',
  'mcp-prompt',
  'mcp-elicit',
  'mcp-input',
  'popup',
  'python',
  'registry',
];
/**
 * Registry actions (`registry(ACTION[:PRINCIPAL])`); `add` and `read` are low risk, moving or removing a binding is
 * not.
 */
const REGISTRY_ACTIONS = ['connect', 'add', 'activate', 'remove', 'read'] as const;
const LOW_RISK_REGISTRY: ReadonlySet<string> = new Set(['connect', 'add', 'read']);
const LOW_RISK: ReadonlySet<RuleKind> = new Set<RuleKind>(['tool', 'storage', 'subtasks', 'resolve']);

/** The part of a request rules look at. */
export type RuleSubject = Pick<GateRequest, 'kind' | 'toolName' | 'revision' | 'target' | 'access'> & {
  principal?: string;
};

/** A parsed rule: canonical text plus a matcher. */
export interface Rule {
  readonly kind: RuleKind;
  /** Canonical text, e.g. `fetch(read:https://api.example.com)`. */
  readonly text: string;
  matches(s: RuleSubject): boolean;
}

const TOOL_GLOB_RE = /^[A-Za-z0-9_*-]{1,64}$/;
const REV_RE = /^b[a-z2-7]{20,200}$/;
const NAME_GLOB_RE = /^[A-Za-z0-9_.*-]{1,128}$/;
// Printable ASCII without space, parentheses, quotes or backslash; used for MCP items and other free targets.
const ITEM_RE = /^[\x21\x23-\x26\x2a-\x5b\x5d-\x7e]{1,1024}$/;

function invalid(rule: string, why: string): TyError {
  return new TyError('E_INVALID_SETTINGS', `invalid rule "${rule.slice(0, 200)}": ${why}`);
}

/** Anchored glob: `*` matches any run of characters (including none); everything else is literal. */
export function globToRegExp(glob: string, flags = ''): RegExp {
  const body = glob
    .split('*')
    .map((p) => p.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, flags);
}

// ---------- origins ----------

/** A normalized https origin: lowercase ASCII host (IDN as punycode, no trailing dot), port '' for 443. */
export interface NormalizedOrigin {
  host: string;
  port: string;
}

type OriginPattern =
  | { type: 'any' }
  | { type: 'exact'; host: string; port: string }
  | { type: 'wildcard'; suffix: string; port: string };

function isIpHost(host: string): boolean {
  return host.startsWith('[') || /^[0-9.]+$/.test(host) || /^[0-9]+$/.test(host.split('.').pop() ?? '');
}

/**
 * Normalize an origin (`https://host[:port]`, optional trailing `/`) with the WHATWG URL parser, as
 * fetch would: lowercases, converts IDN to punycode, canonicalizes IPv4/IPv6 forms, drops port 443.
 * Returns undefined for anything else (other scheme, credentials, path, query, fragment).
 */
export function normalizeOrigin(input: string): NormalizedOrigin | undefined {
  if (typeof input !== 'string' || input.length > 2048 || !/^https:\/\//i.test(input)) return undefined;
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'https:' || u.username || u.password || u.search || u.hash || u.pathname !== '/') return undefined;
  // Reject input that carried a path, query or fragment the parser discarded (e.g. `https://a.com/.`).
  const rest = input.slice(8).replace(/\/$/, '');
  if (/[/?#\\@]/.test(rest)) return undefined;
  const host = u.hostname.endsWith('.') ? u.hostname.slice(0, -1) : u.hostname;
  if (!host) return undefined;
  return { host, port: u.port };
}

function parseOriginPattern(rule: string, s: string): OriginPattern {
  if (s === '*') return { type: 'any' };
  const wild = /^https:\/\/\*\.([^/:*]+)(?::(\d{1,5}))?\/?$/i.exec(s);
  if (wild) {
    const n = normalizeOrigin(`https://${wild[1]}${wild[2] ? `:${wild[2]}` : ''}`);
    if (!n) throw invalid(rule, `"${s}" is not a valid wildcard origin; use https://*.example.com[:port]`);
    if (isIpHost(n.host)) throw invalid(rule, 'a wildcard origin needs a domain name, not an IP address');
    if (!n.host.includes('.'))
      throw invalid(rule, `"*.${n.host}" would match a whole top-level domain; name at least two labels`);
    return { type: 'wildcard', suffix: n.host, port: n.port };
  }
  if (s.includes('*'))
    throw invalid(
      rule,
      `"${s}": "*" is allowed only as the whole origin or as the first label (https://*.example.com)`,
    );
  const n = normalizeOrigin(s);
  if (!n) throw invalid(rule, `"${s}" is not an origin; use https://host[:port] (https only, no path)`);
  return { type: 'exact', host: n.host, port: n.port };
}

function originText(p: OriginPattern): string {
  if (p.type === 'any') return '*';
  const port = p.port ? `:${p.port}` : '';
  return p.type === 'exact' ? `https://${p.host}${port}` : `https://*.${p.suffix}${port}`;
}

/**
 * Origin matching: exact patterns compare normalized host and port; `https://*.example.com` matches
 * any deeper subdomain (a.example.com, a.b.example.com), never example.com itself, never an IP address,
 * never example.com.evil.net or evilexample.com. A pattern without a port matches only port 443.
 */
function originMatches(p: OriginPattern, target: string | undefined): boolean {
  if (target === undefined) return false;
  const t = normalizeOrigin(target);
  if (!t) return false;
  if (p.type === 'any') return true;
  if (p.port !== t.port) return false;
  if (p.type === 'exact') return p.host === t.host;
  return !isIpHost(t.host) && t.host.length > p.suffix.length + 1 && t.host.endsWith(`.${p.suffix}`);
}

// ---------- rules ----------

function splitServerItem(rule: string, body: string): { server: string; item: string } {
  if (body === '*') return { server: '*', item: '*' };
  const slash = body.indexOf('/');
  if (slash < 1 || slash === body.length - 1)
    throw invalid(rule, 'expected SERVER/NAME, e.g. mcp(files/read_file) or mcp(files/*)');
  const server = body.slice(0, slash);
  const item = body.slice(slash + 1);
  if (!NAME_GLOB_RE.test(server))
    throw invalid(rule, `server name "${server.slice(0, 64)}" may hold only A-Z a-z 0-9 _ . - and *`);
  if (!ITEM_RE.test(item))
    throw invalid(
      rule,
      'the name after "/" must be printable ASCII without spaces, quotes, backslashes or parentheses',
    );
  return { server, item };
}

function subjectServerItem(target: string | undefined): { server: string; item: string } | undefined {
  if (target === undefined) return undefined;
  const slash = target.indexOf('/');
  if (slash < 1) return undefined;
  return { server: target.slice(0, slash), item: target.slice(slash + 1) };
}

/**
 * Parse one rule `kind(pattern)`. Kinds and patterns:
 * - `tool(NAME)`, `tool(NAME@REV)`, `tool(*)`, `tool(prefix_*)`: tool invocations (names case-sensitive).
 * - `fetch(ACCESS:ORIGIN)`: ACCESS `read` (GET, HEAD, OPTIONS), `write` (everything else) or `*`;
 *   ORIGIN `https://host[:port]`, `https://*.example.com[:port]` or `*` (any https origin).
 * - `mcp(SERVER/TOOL)`, `mcp-resource(SERVER/URI)`, `mcp-prompt(SERVER/NAME)`: `*` globs in either part; `mcp(*)`.
 * - `mcp-elicit(SERVER)`: a bridged server's elicitation requests may be shown to a person as a form (only an
 *   allow rule enables it, no mode does; core/mcp/input/elicit.ts); SERVER a glob over server names, `*` any.
 * - `mcp-input(SERVER/KIND)`: a bridged server's input requests of KIND (`elicitation`, `sampling`, `roots` or `*`)
 *   may be relayed to the MCP client, a 2026-07-28 client as an `input_required` result (only an allow rule enables
 *   it, no mode does; core/mcp/input/relay.ts); SERVER a glob over server names.
 * - `popup(custom-html)`, `popup(https://ORIGIN)`, `popup(*)`.
 * - `secret(NAME)`, `resolve(TOOL)`, `storage(*)`, `subtasks(*)`, `python(*)`: `*` globs.
 * - `registry(ACTION)`, `registry(ACTION:PRINCIPAL)`: registration requests of protocol clients; ACTION `add`,
 *   `activate` (moving an active binding), `remove`, `read` (tool/list, tool/show), `connect` (initialize) or `*`;
 * PRINCIPAL a glob over
 *   the client's principal (`protocol:ide`, `origin:https://app.example.com`, `protocol:*`), default any.
 * Kind and access keywords are case-insensitive; origins are normalized (host case, port 443, IDN).
 * @throws TyError E_INVALID_SETTINGS naming the rule and what is wrong.
 */
export function parseRule(input: string): Rule {
  if (typeof input !== 'string') throw invalid(String(input), 'a rule is a string like tool(NAME)');
  const rule = input.trim();
  const m = /^([A-Za-z-]+)\((.*)\)$/s.exec(rule);
  if (!m) throw invalid(rule, 'expected kind(pattern), e.g. tool(weather) or fetch(read:https://api.example.com)');
  const kind = m[1]!.toLowerCase() as RuleKind;
  const body = m[2]!;
  if (!RULE_KINDS.includes(kind)) {
    const near = nearest(kind, RULE_KINDS);
    throw invalid(
      rule,
      `unknown kind "${m[1]}"${near ? `; did you mean ${near}(...)?` : ''}; kinds are ${RULE_KINDS.join(', ')}`,
    );
  }
  if (!body || /\s/.test(body)) throw invalid(rule, 'the pattern is empty or holds white space');

  switch (kind) {
    case 'tool': {
      const at = body.indexOf('@');
      const name = at < 0 ? body : body.slice(0, at);
      const rev = at < 0 ? undefined : body.slice(at + 1);
      if (!TOOL_GLOB_RE.test(name))
        throw invalid(rule, 'a tool name is 1-64 of A-Z a-z 0-9 _ - (with * as a wildcard)');
      if (rev !== undefined && !REV_RE.test(rev))
        throw invalid(rule, `"${rev.slice(0, 80)}" is not a revision id (base32 CID starting with "b")`);
      const re = globToRegExp(name);
      return {
        kind,
        text: `tool(${body})`,
        matches: (s) => s.kind === 'tool' && re.test(s.toolName) && (rev === undefined || s.revision === rev),
      };
    }
    case 'fetch': {
      const colon = body.indexOf(':');
      if (colon < 0) throw invalid(rule, 'expected fetch(ACCESS:ORIGIN), e.g. fetch(read:https://api.example.com)');
      const access = body.slice(0, colon).toLowerCase();
      if (access !== 'read' && access !== 'write' && access !== '*') {
        const hint = /^https?$/.test(access)
          ? `; the access class comes first: fetch(read:${body}) or fetch(*:${body})`
          : '';
        throw invalid(
          rule,
          `access "${body.slice(0, colon)}" must be read, write or *, as in fetch(ACCESS:ORIGIN)${hint}`,
        );
      }
      const origin = parseOriginPattern(rule, body.slice(colon + 1));
      return {
        kind,
        text: `fetch(${access}:${originText(origin)})`,
        matches: (s) =>
          s.kind === 'fetch' &&
          (access === '*' || s.access === access) &&
          s.access !== undefined &&
          originMatches(origin, s.target),
      };
    }
    case 'mcp':
    case 'mcp-resource':
    case 'mcp-prompt': {
      const { server, item } = splitServerItem(rule, body);
      const sre = globToRegExp(server);
      const ire = globToRegExp(item);
      return {
        kind,
        text: `${kind}(${body === '*' ? '*' : `${server}/${item}`})`,
        matches: (s) => {
          if (s.kind !== kind) return false;
          const t = subjectServerItem(s.target);
          return t !== undefined && sre.test(t.server) && ire.test(t.item);
        },
      };
    }
    case 'mcp-elicit': {
      if (!NAME_GLOB_RE.test(body))
        throw invalid(
          rule,
          `expected mcp-elicit(SERVER): a server name (A-Z a-z 0-9 _ . -, * as a wildcard), e.g. mcp-elicit(github)`,
        );
      const re = globToRegExp(body);
      return {
        kind,
        text: `mcp-elicit(${body})`,
        matches: (s) => s.kind === 'mcp-elicit' && s.target !== undefined && re.test(s.target),
      };
    }
    case 'mcp-input': {
      const { server, item } = splitServerItem(rule, body);
      if (!NAME_GLOB_RE.test(server) || !['elicitation', 'sampling', 'roots', '*'].includes(item))
        throw invalid(
          rule,
          'expected mcp-input(SERVER/KIND): a server name (* as a wildcard) and KIND elicitation, sampling, roots or *, e.g. mcp-input(github/elicitation)',
        );
      const sre = globToRegExp(server);
      return {
        kind,
        text: `mcp-input(${server}/${item})`,
        matches: (s) => {
          if (s.kind !== 'mcp-input') return false;
          const t = subjectServerItem(s.target);
          return t !== undefined && sre.test(t.server) && (item === '*' || t.item === item);
        },
      };
    }
    case 'popup': {
      if (body === 'custom-html' || body === '*') {
        return {
          kind,
          text: `popup(${body})`,
          matches: (s) => s.kind === 'popup' && s.target !== undefined && (body === '*' || s.target === 'custom-html'),
        };
      }
      const origin = parseOriginPattern(rule, body);
      return {
        kind,
        text: `popup(${originText(origin)})`,
        matches: (s) => s.kind === 'popup' && s.target !== 'custom-html' && originMatches(origin, s.target),
      };
    }
    case 'registry': {
      const colon = body.indexOf(':');
      const action = (colon < 0 ? body : body.slice(0, colon)).toLowerCase();
      const who = colon < 0 ? '*' : body.slice(colon + 1);
      if (action !== '*' && !(REGISTRY_ACTIONS as readonly string[]).includes(action))
        throw invalid(
          rule,
          `registry action "${action.slice(0, 40)}" must be ${REGISTRY_ACTIONS.join(', ')} or *, as in registry(add) or registry(activate:protocol:ide)`,
        );
      if (!ITEM_RE.test(who))
        throw invalid(rule, 'the principal must be printable ASCII without spaces, quotes, backslashes or parentheses');
      const re = globToRegExp(who);
      return {
        kind,
        text: `registry(${action}${who === '*' ? '' : `:${who}`})`,
        matches: (s) =>
          s.kind === 'registry' &&
          (action === '*' || s.target === action) &&
          (who === '*' || (s.principal !== undefined && re.test(s.principal))),
      };
    }
    default: {
      if (!ITEM_RE.test(body))
        throw invalid(rule, 'the pattern must be printable ASCII without spaces, quotes, backslashes or parentheses');
      const re = globToRegExp(body);
      return {
        kind,
        text: `${kind}(${body})`,
        matches: (s) => s.kind === kind && (body === '*' || (s.target !== undefined && re.test(s.target))),
      };
    }
  }
}

// ---------- policy ----------

/** Raw rules of one scope, as read from a settings file, the session or the command line. */
export interface RuleSet {
  scope: Scope;
  /** Where they came from (a file path, `--allow`); host-side only, never sent into tool code. */
  source?: string;
  mode?: PermissionMode;
  allow?: string[];
  deny?: string[];
  ask?: string[];
  alwaysAsk?: string[];
}

export interface CompiledRule {
  rule: Rule;
  list: RuleList;
  scope: Scope;
  source?: string;
}

export interface Policy {
  mode: PermissionMode;
  /** Which scope set the mode (`default` when none did). */
  modeScope: Scope | 'default';
  /** Grouped by list; within a list ordered by scope precedence (flags first). */
  rules: Record<RuleList, CompiledRule[]>;
}

/**
 * Merge rule sets of every scope into one policy. Lists from all scopes are kept (deny in any scope
 * denies); the mode comes from the highest-precedence scope that sets one.
 * @throws TyError E_INVALID_SETTINGS (E_USAGE for the `flags` scope) naming the scope, source and rule.
 */
export function compilePolicy(sets: readonly RuleSet[]): Policy {
  const rules: Record<RuleList, CompiledRule[]> = { deny: [], alwaysAsk: [], allow: [], ask: [] };
  const ordered = [...sets].sort((a, b) => SCOPES.indexOf(a.scope) - SCOPES.indexOf(b.scope));
  let mode: PermissionMode | undefined;
  let modeScope: Scope | 'default' = 'default';
  for (const set of ordered) {
    if (!SCOPES.includes(set.scope))
      throw new TyError('E_INVALID_SETTINGS', `unknown rule scope "${String(set.scope)}"`);
    const where = `${set.scope}${set.source ? ` (${set.source})` : ''}`;
    if (set.mode !== undefined) {
      if (!PERMISSION_MODES.includes(set.mode)) {
        throw new TyError(
          set.scope === 'flags' ? 'E_USAGE' : 'E_INVALID_SETTINGS',
          `${where}: mode "${String(set.mode).slice(0, 40)}" must be one of ${PERMISSION_MODES.join(', ')}`,
        );
      }
      if (mode === undefined) {
        mode = set.mode;
        modeScope = set.scope;
      }
    }
    for (const list of RULE_LISTS) {
      const raw = set[list];
      if (raw === undefined) continue;
      if (!Array.isArray(raw)) throw new TyError('E_INVALID_SETTINGS', `${where}: ${list} must be a list of rules`);
      raw.forEach((text, i) => {
        try {
          const c: CompiledRule = { rule: parseRule(text), list, scope: set.scope };
          if (set.source !== undefined) c.source = set.source;
          rules[list].push(c);
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          throw new TyError(
            set.scope === 'flags' ? 'E_USAGE' : 'E_INVALID_SETTINGS',
            `${where}: ${list}[${i}]: ${msg}`,
            { scope: set.scope, field: `${list}[${i}]` },
          );
        }
      });
    }
  }
  return { mode: mode ?? DEFAULT_MODE, modeScope, rules };
}

// ---------- decisions ----------

/** A remembered answer a person gave (session: in memory; permanent: stored per revision identity). */
export interface StoredDecision {
  kind: RuleKind;
  revision: string;
  toolName: string;
  target?: string;
  access?: 'read' | 'write';
  allow: boolean;
  scope: 'session' | 'permanent';
  channel?: string;
  /** ms since the epoch */
  at?: number;
}

export type TraceList = RuleList | 'host' | 'manifest' | 'mode' | 'remembered' | 'hook' | 'person' | 'pause';

/** Why a decision came out as it did: the rule (or other source) and the scope that decided. */
export interface Trace {
  list: TraceList;
  /** Canonical rule text, or a description (`manifest upper bound`, `mode standard`, `answer via terminal`). */
  rule: string;
  scope: string;
  /** Host-side only: the settings file or flag. Never put into messages sent into tool code. */
  source?: string;
}

/**
 * A trace as one phrase for people (questions, audit lines, messages): rule lists read `allow fetch(...)`;
 * other sources whose rule text already names them (`mode standard`, `manifest upper bound`, hook labels)
 * are shown once, never `mode mode standard`.
 */
export function traceText(t: Pick<Trace, 'list' | 'rule'>): string {
  if ((RULE_LISTS as readonly string[]).includes(t.list)) return `${t.list} rule ${t.rule}`;
  if (t.rule === t.list || t.rule.startsWith(`${t.list} `) || t.list === 'hook') return t.rule;
  return `${t.list}: ${t.rule}`;
}

export interface PolicyDecision {
  effect: 'allow' | 'deny' | 'ask';
  trace: Trace;
  /** True when an alwaysAsk rule decided: ask every time, answers apply once, hooks may only deny. */
  alwaysAsk: boolean;
  /** The rule that would allow exactly this request without asking. */
  suggestedRule: string;
}

/** The narrowest allow rule for a request, e.g. `fetch(read:https://api.example.com)` or `tool(NAME@REV)`. */
export function suggestRule(s: RuleSubject): string {
  switch (s.kind) {
    case 'tool':
      return `tool(${s.toolName}@${s.revision})`;
    case 'fetch': {
      const n = s.target !== undefined ? normalizeOrigin(s.target) : undefined;
      const origin = n ? `https://${n.host}${n.port ? `:${n.port}` : ''}` : String(s.target);
      return `fetch(${s.access ?? '*'}:${origin})`;
    }
    case 'registry':
      return `registry(${s.target ?? '*'}${s.principal !== undefined ? `:${s.principal}` : ''})`;
    default:
      return `${s.kind}(${s.target ?? '*'})`;
  }
}

/** True when a remembered decision covers exactly this request (same revision identity, kind, target, access). */
export function decisionCovers(d: StoredDecision, s: RuleSubject): boolean {
  return (
    d.revision === s.revision &&
    d.kind === s.kind &&
    (d.target ?? null) === (s.target ?? null) &&
    (d.access ?? null) === (s.access ?? null)
  );
}

function fromRule(
  effect: PolicyDecision['effect'],
  c: CompiledRule,
  s: RuleSubject,
  alwaysAsk = false,
): PolicyDecision {
  const trace: Trace = { list: c.list, rule: c.rule.text, scope: c.scope };
  if (c.source !== undefined) trace.source = c.source;
  return { effect, trace, alwaysAsk, suggestedRule: suggestRule(s) };
}

/**
 * Decide one request. Order (first match wins):
 * 0. `unavailable === true` (the host offers no such capability at all) is denied without asking, in every mode;
 * 1. manifest upper bound: `requested === false` is denied without asking, in every mode;
 * 2. deny rules (any scope); 3. a remembered "no"; 4. alwaysAsk rules (ask, beats allow and every mode);
 * 5. allow rules (any scope); 6. a remembered "yes"; 7. ask rules; 8. the mode's default.
 * Pure: no I/O, no clock.
 */
export function decide(
  policy: Policy,
  req: RuleSubject & { requested?: boolean; unavailable?: boolean },
  remembered: readonly StoredDecision[] = [],
): PolicyDecision {
  const suggestedRule = suggestRule(req);
  if (req.unavailable === true)
    return {
      effect: 'deny',
      trace: { list: 'host', rule: 'not available on this host', scope: 'host' },
      alwaysAsk: false,
      suggestedRule,
    };
  if (req.requested === false) {
    return {
      effect: 'deny',
      trace: { list: 'manifest', rule: 'manifest upper bound', scope: 'manifest' },
      alwaysAsk: false,
      suggestedRule,
    };
  }
  const first = (list: RuleList) => policy.rules[list].find((c) => c.rule.matches(req));
  const d = first('deny');
  if (d) return fromRule('deny', d, req);
  const mem = remembered.filter((r) => decisionCovers(r, req));
  const no = mem.find((r) => !r.allow);
  if (no)
    return {
      effect: 'deny',
      trace: {
        list: 'remembered',
        rule: `earlier answer "no"${no.channel ? ` via ${no.channel}` : ''}`,
        scope: no.scope,
      },
      alwaysAsk: false,
      suggestedRule,
    };
  const aa = first('alwaysAsk');
  if (aa) return fromRule('ask', aa, req, true);
  const a = first('allow');
  if (a) return fromRule('allow', a, req);
  const yes = mem.find((r) => r.allow);
  if (yes)
    return {
      effect: 'allow',
      trace: {
        list: 'remembered',
        rule: `earlier answer "yes"${yes.channel ? ` via ${yes.channel}` : ''}`,
        scope: yes.scope,
      },
      alwaysAsk: false,
      suggestedRule,
    };
  const k = first('ask');
  if (k) return fromRule('ask', k, req);
  const lowRisk = req.kind === 'registry' ? LOW_RISK_REGISTRY.has(req.target ?? '') : LOW_RISK.has(req.kind);
  const effect = policy.mode === 'unrestricted' || (policy.mode === 'standard' && lowRisk) ? 'allow' : 'ask';
  return {
    effect,
    trace: { list: 'mode', rule: `mode ${policy.mode}`, scope: policy.modeScope },
    alwaysAsk: false,
    suggestedRule,
  };
}

/**
 * A hook matcher: `*` (everything), a tool-name glob (`weather`, `gh_*`; matches the request's tool name,
 * whatever its kind), or a rule (`fetch(read:*)`, `tool(x@REV)`).
 * @throws TyError E_INVALID_SETTINGS
 */
export function parseMatcher(m: string): (s: RuleSubject) => boolean {
  const t = m.trim();
  if (t === '*' || t === '') return () => true;
  if (t.includes('(')) {
    const r = parseRule(t);
    return (s) => r.matches(s);
  }
  if (!TOOL_GLOB_RE.test(t))
    throw new TyError(
      'E_INVALID_SETTINGS',
      `invalid hook matcher "${t.slice(0, 100)}": use *, a tool name (with * wildcards) or a rule like tool(NAME)`,
    );
  const re = globToRegExp(t);
  return (s) => re.test(s.toolName);
}
