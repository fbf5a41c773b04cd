// Remote MCP servers in the browser host: definitions with header secrets, pooled Streamable HTTP sessions, SERVER__TOOL offers, every call through the gate and audited; browser host, trusted side.
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { TyError, toTyError } from '../core/errors.js';
import type { Gate, GateRequest, Question } from '../core/runtime.js';
import type { InvokeResult } from '../core/invoke.js';
import type { SecretValues } from '../core/secrets.js';
import { checkToolArguments } from '../core/mcp/args.js';
import { definitionHash } from '../core/mcp/definitions.js';
import { requestLogLine } from '../core/mcp/messages.js';
import { NAME_SEP, prefixedNaming } from '../core/mcp/naming.js';
import { revisionId } from '../core/registry.js';
import type { ToolManifest } from '../protocol/manifest.js';
import type { McpHttpSession } from './mcp-session.js';

/** A header value: the value itself (stored in the host's MCP secret store at once) or the name of a stored secret. */
export type McpHeaderValue = string | { secret: string };

/** One remote server, as given to `createBrowserHost({ mcpServers })` or `host.mcp.add`. */
export interface BrowserMcpServer {
  /** 1-32 of a-z, 0-9 and single dashes (tools are offered as `NAME__TOOL`). */
  name: string;
  /** The server's Streamable HTTP endpoint, `https://...` (or `http://` on loopback). */
  url: string;
  /** Request headers (e.g. `Authorization`); their values are secrets: stored, never shown, logged or audited. */
  headers?: Record<string, McpHeaderValue>;
  /** Tool names that pass without asking (deny rules, alwaysAsk and the pause still apply). */
  allow?: string[];
  /** `none`: every call passes without asking (deny rules still apply); default `default`. */
  ask?: 'default' | 'none';
  /** Per-request timeout, ms (default 60 000). */
  timeoutMs?: number;
}

export type McpConnectionState = 'idle' | 'connecting' | 'connected' | 'failed';

/** What the host tells about a server: never a header value. */
export interface McpServerInfo {
  name: string;
  url: string;
  /** Header names with the secret each value is kept under. */
  headers: { name: string; secret: string }[];
  allow: string[];
  ask: 'default' | 'none';
  state: McpConnectionState;
  /** The last connection failure (E_MCP_CORS, E_MCP_UNREACHABLE, E_MCP...). */
  error?: { code: string; message: string };
  /** The protocol version agreed with the server, once connected. */
  protocolVersion?: string;
  /** Tools offered, once listed. */
  tools?: number;
}

/** One offered tool: `SERVER__TOOL`, with the server's definition and the revision a call is pinned to. */
export interface McpOfferedTool {
  name: string;
  server: string;
  tool: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Tool['annotations'];
  /** The CID of the tool's external-service manifest (name, description, schema): a call pinned to it refuses a changed tool. */
  revision: string;
  /** The external-service manifest the model sees (name, description, parameters). */
  manifest: ToolManifest;
}

/** Server names: the command line's rule (1-32 of a-z, 0-9 and single dashes). */
export const MCP_SERVER_NAME_RE = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,31}$/;
const HEADER_NAME_RE = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
/** Headers a page may not set (the Fetch standard's forbidden request headers) or that the transport owns. */
const RESERVED_HEADERS = new Set(['host', 'origin', 'referer', 'cookie', 'content-length', 'content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'connection']);
/** Characters of a call's arguments shown in the question. */
const PREVIEW_CHARS = 2000;
/** The trace scope of a server's own allow list / ask none (audit `scope`). */
export const SERVER_RULE_SCOPE = 'server definition';

interface Entry {
  def: Required<Pick<BrowserMcpServer, 'name' | 'url' | 'allow' | 'ask' | 'timeoutMs'>> & { headers: { name: string; secret: string }[] };
  session: Promise<McpHttpSession> | undefined;
  info: McpServerInfo;
}

export interface BrowserMcpDeps {
  gate: () => Gate;
  /** Where header values live (the host's MCP secret store; apart from the tools' secrets). */
  secrets: SecretValues;
  principal: string;
  /** One line per request (server, method, tool, outcome); never arguments, answers or header values. */
  log?: (line: string) => void;
  /** Header values currently in use (withheld from questions, audit and messages by the gate). */
  withheld: Set<string>;
}

function checkUrl(name: string, url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TyError('E_USAGE', `MCP server "${name}": "${String(url).slice(0, 200)}" is not a URL`);
  }
  const loopback = u.hostname === 'localhost' || u.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(u.hostname);
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) throw new TyError('E_USAGE', `MCP server "${name}": the URL must be https (http only on loopback)`);
  if (u.username || u.password) throw new TyError('E_USAGE', `MCP server "${name}": credentials in the URL are refused; put them in a header`);
  u.hash = '';
  return u.href;
}

/** A call's arguments as one JSON line for the question (undefined when there are none). */
function previewOf(args: Record<string, unknown>): string | undefined {
  const s = JSON.stringify(args);
  return s === '{}' ? undefined : `arguments: ${s.slice(0, PREVIEW_CHARS)}`;
}

function hintsOf(t: Tool): NonNullable<Question['hints']> {
  const a = t.annotations;
  const hints: NonNullable<Question['hints']> = {};
  for (const k of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) if (typeof a?.[k] === 'boolean') hints[k] = a[k];
  return hints;
}

/** `structuredContent`, else the text blocks joined, else the content array (what `invoke` returns). */
function resultValue(r: CallToolResult): unknown {
  const content = r.content ?? [];
  const texts = content.filter((c): c is { type: 'text'; text: string } => c.type === 'text').map((c) => c.text);
  if (r.structuredContent !== undefined) return r.structuredContent;
  if (texts.length === content.length) return texts.join('\n');
  return content;
}

/**
 * The browser host's MCP servers (`host.mcp`). Sessions start on first use and are kept per server; a failed or
 * ended one is replaced by the next use. Every `tools/call` reloads nothing from disk (definitions live in
 * memory), looks the tool up in the server's current list, checks the arguments against its own schema
 * (unlisted fields refused) before anything is asked or sent, then runs through the host's gate (kind `mcp`,
 * target `SERVER/TOOL`: deny rules and the pause first, the server's allow list or ask none as a preapproved
 * allow, else the inline question), audited.
 */
export class BrowserMcp {
  readonly #entries = new Map<string, Entry>();
  readonly #listeners = new Set<(info: McpServerInfo[]) => void>();
  #closed = false;

  constructor(private readonly deps: BrowserMcpDeps) {}

  /** Called with every server's state whenever one changes; returns the unsubscribe function. */
  onChange(fn: (info: McpServerInfo[]) => void): () => void {
    this.#listeners.add(fn);
    return () => void this.#listeners.delete(fn);
  }

  #emit(): void {
    const all = this.servers();
    for (const l of this.#listeners) {
      try {
        l(all);
      } catch {
        /* a listener never disturbs the host */
      }
    }
  }

  #set(e: Entry, patch: Partial<McpServerInfo>): void {
    e.info = { ...e.info, ...patch };
    if (patch.state === 'connected' || patch.state === 'connecting' || patch.state === 'idle') delete e.info.error;
    this.#emit();
  }

  /** Every configured server with its connection state. */
  servers(): McpServerInfo[] {
    return [...this.#entries.values()].map((e) => structuredClone(e.info));
  }

  /**
   * Add (or replace) a server. Plain header values are stored in the host's MCP secret store at once under
   * `mcp.SERVER.N` and only their secret names are kept. Nothing is contacted yet.
   * @throws TyError E_USAGE (bad name, URL, header name, allow entry or secret name)
   */
  async add(s: BrowserMcpServer): Promise<McpServerInfo> {
    if (typeof s?.name !== 'string' || !MCP_SERVER_NAME_RE.test(s.name)) throw new TyError('E_USAGE', `"${String(s?.name).slice(0, 40)}" is not an MCP server name (1-32 of a-z, 0-9 and single dashes)`);
    const url = checkUrl(s.name, s.url);
    const headers: { name: string; secret: string }[] = [];
    let n = 0;
    for (const [k, v] of Object.entries(s.headers ?? {})) {
      if (!HEADER_NAME_RE.test(k) || RESERVED_HEADERS.has(k.toLowerCase()) || k.toLowerCase().startsWith('sec-') || k.toLowerCase().startsWith('proxy-')) throw new TyError('E_USAGE', `MCP server "${s.name}": "${k.slice(0, 64)}" cannot be set as a header`);
      if (typeof v === 'string') {
        if (v.length === 0 || v.length > 8192 || /[\r\n\0]/.test(v)) throw new TyError('E_USAGE', `MCP server "${s.name}": the value of header ${k} is empty, too long, or has a line break`);
        const secret = `mcp.${s.name}.${n++}`;
        await this.deps.secrets.set(secret, v);
        headers.push({ name: k, secret });
      } else if (v && typeof v.secret === 'string' && /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/.test(v.secret)) headers.push({ name: k, secret: v.secret });
      else throw new TyError('E_USAGE', `MCP server "${s.name}": header ${k} needs a value or { secret: NAME }`);
    }
    const allow = [...(s.allow ?? [])];
    for (const a of allow) if (typeof a !== 'string' || a.length === 0 || a.length > 256) throw new TyError('E_USAGE', `MCP server "${s.name}": allow entries are tool names`);
    const ask = s.ask ?? 'default';
    if (ask !== 'default' && ask !== 'none') throw new TyError('E_USAGE', `MCP server "${s.name}": ask is "default" or "none"`);
    const timeoutMs = s.timeoutMs ?? 60_000;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 600_000) throw new TyError('E_USAGE', `MCP server "${s.name}": timeoutMs is 100-600000`);
    const old = this.#entries.get(s.name);
    if (old) await this.#end(old);
    const def = { name: s.name, url, headers, allow, ask, timeoutMs };
    const e: Entry = { def, session: undefined, info: { name: s.name, url, headers: headers.map((h) => ({ ...h })), allow: [...allow], ask, state: 'idle' } };
    this.#entries.set(s.name, e);
    this.#emit();
    return structuredClone(e.info);
  }

  /** Remove a server: its session ends and the header values stored for it (`mcp.SERVER.N`) are deleted. @returns false when there was none. */
  async remove(name: string): Promise<boolean> {
    const e = this.#entries.get(name);
    if (!e) return false;
    this.#entries.delete(name);
    await this.#end(e);
    for (const h of e.def.headers) if (h.secret.startsWith(`mcp.${name}.`)) await this.deps.secrets.delete(h.secret);
    this.#emit();
    return true;
  }

  async #end(e: Entry): Promise<void> {
    const s = e.session;
    e.session = undefined;
    if (s) await s.then((x) => x.close(), () => undefined);
  }

  /** Connect now (or reuse the session). @returns the server's state; a failure is in `state`/`error`, not thrown. */
  async connect(name: string, signal?: AbortSignal): Promise<McpServerInfo> {
    const e = this.#entries.get(name);
    if (!e) throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${name.slice(0, 40)}" is configured`);
    try {
      const s = await this.#session(e, signal);
      this.#set(e, { tools: (await s.tools(signal)).size });
    } catch {
      /* in the state */
    }
    return structuredClone(e.info);
  }

  async #session(e: Entry, signal?: AbortSignal): Promise<McpHttpSession> {
    if (this.#closed) throw new TyError('E_MCP', 'the host is closing');
    const live = e.session;
    if (live) {
      const s = await live.catch(() => undefined);
      if (s?.alive) return s;
      if (e.session === live) e.session = undefined;
    }
    const p = (async () => {
      const headers: Record<string, string> = {};
      for (const h of e.def.headers) {
        const v = await this.deps.secrets.get(h.secret);
        if (v === undefined) throw new TyError('E_SECRET_DENIED', `MCP server "${e.def.name}": the secret ${h.secret} for header ${h.name} has no value`, { secret: h.secret });
        this.deps.withheld.add(v);
        headers[h.name] = v;
      }
      // loaded only when a server is used: the SDK client stays out of the page's first chunk
      const { McpHttpSession } = await import('./mcp-session.js');
      return McpHttpSession.start(e.def.name, e.def.url, headers, {
        timeoutMs: e.def.timeoutMs,
        ...(signal ? { signal } : {}),
        onFiltered: (w) => this.#log(e.def.name, w.method ?? '(message)', undefined, w.action === 'answer' ? 'refused-server-request' : 'dropped'),
        onClose: () => {
          if (this.#entries.get(e.def.name) === e && e.info.state === 'connected') this.#set(e, { state: 'idle' });
        },
      });
    })();
    e.session = p;
    this.#set(e, { state: 'connecting' });
    try {
      const s = await p;
      this.#set(e, { state: 'connected', ...(s.protocolVersion ? { protocolVersion: s.protocolVersion } : {}) });
      this.#log(e.def.name, 'initialize', undefined, `ok:${s.protocolVersion ?? '?'}`);
      return s;
    } catch (err) {
      if (e.session === p) e.session = undefined;
      const t = toTyError(err, 'E_MCP');
      this.#set(e, { state: 'failed', error: { code: t.code, message: this.#scrub(t.message) } });
      this.#log(e.def.name, 'initialize', undefined, `failed:${t.code}`);
      throw t;
    }
  }

  /** `text` with every header value in use replaced by `<withheld>` (a server may echo a token in an error). */
  #scrub(text: string): string {
    let out = text;
    for (const v of this.deps.withheld) if (v.length > 0) out = out.split(v).join('<withheld>');
    return out;
  }

  #log(server: string, method: string, name: string | undefined, outcome: string): void {
    this.deps.log?.(requestLogLine({ server, method, name, outcome }));
  }

  async #offer(server: string, t: Tool): Promise<McpOfferedTool> {
    const name = prefixedNaming.name(server, t.name);
    const manifest: ToolManifest = {
      name,
      description: (t.description ?? t.title ?? `${t.name} of the MCP server ${server}`).slice(0, 4000),
      parameters: (t.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
      execution: { kind: 'external-service', serviceId: server, tool: t.name },
    };
    const o: McpOfferedTool = { name, server, tool: t.name, inputSchema: manifest.parameters, revision: await revisionId(manifest), manifest };
    if (t.title !== undefined) o.title = t.title;
    if (t.description !== undefined) o.description = t.description;
    if (t.outputSchema !== undefined) o.outputSchema = t.outputSchema as Record<string, unknown>;
    if (t.annotations !== undefined) o.annotations = t.annotations;
    return o;
  }

  /**
   * The offered tools of every server (or of `server`), connecting as needed. A server that cannot be reached is
   * skipped (its `state` says why) unless it is the one named, which throws.
   * @throws TyError E_UNKNOWN_TOOL (no such server), the connection's codes when `server` is named.
   */
  async listTools(server?: string, signal?: AbortSignal): Promise<McpOfferedTool[]> {
    const out: McpOfferedTool[] = [];
    const entries = server === undefined ? [...this.#entries.values()] : [this.#entries.get(server)];
    if (server !== undefined && entries[0] === undefined) throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${server.slice(0, 40)}" is configured`);
    for (const e of entries) {
      if (!e) continue;
      try {
        const s = await this.#session(e, signal);
        const tools = await s.tools(signal);
        for (const t of tools.values()) out.push(await this.#offer(e.def.name, t));
        this.#set(e, { tools: tools.size });
      } catch (err) {
        if (server !== undefined) throw toTyError(err, 'E_MCP');
      }
    }
    return out;
  }

  /** Whether `ref` (`SERVER__TOOL` or `SERVER__TOOL@REV`) names a configured server's tool. */
  handles(ref: string): boolean {
    const p = prefixedNaming.parseName(ref.split('@')[0] ?? ref);
    return p !== undefined && this.#entries.has(p.server);
  }

  /**
   * Resolve `SERVER__TOOL[@REV]` to the offered tool's manifest and revision (for pinning calls in tasks).
   * @throws TyError E_UNKNOWN_TOOL (no such server or tool; a revision that is not the tool's current one)
   */
  async resolve(ref: string, signal?: AbortSignal): Promise<{ name: string; revision: string; manifest: ToolManifest }> {
    const o = await this.#find(ref, signal);
    return { name: o.offered.name, revision: o.offered.revision, manifest: o.offered.manifest };
  }

  async #find(ref: string, signal?: AbortSignal): Promise<{ e: Entry; s: McpHttpSession; t: Tool; offered: McpOfferedTool }> {
    const at = ref.indexOf('@');
    const name = at < 0 ? ref : ref.slice(0, at);
    const pinned = at < 0 ? undefined : ref.slice(at + 1);
    const p = prefixedNaming.parseName(name);
    const e = p ? this.#entries.get(p.server) : undefined;
    if (!p || !e) throw new TyError('E_UNKNOWN_TOOL', `no MCP server is configured for "${name.slice(0, 80)}" (tools are offered as SERVER${NAME_SEP}TOOL)`);
    const s = await this.#session(e, signal);
    const t = (await s.tools(signal)).get(p.rest);
    if (t === undefined) {
      const why = s.refusedTool(p.rest);
      throw new TyError(why ? 'E_INVALID_ARGS' : 'E_UNKNOWN_TOOL', why ? `${name} is not offered: it ${why.slice(0, 300)}` : `MCP server "${p.server}" has no tool "${p.rest.slice(0, 80)}"`);
    }
    const offered = await this.#offer(p.server, t);
    if (pinned !== undefined && pinned !== offered.revision) throw new TyError('E_UNKNOWN_TOOL', `${name} changed on its server since the call was made (revision ${pinned.slice(0, 16)}… is no longer offered); the model must call it again`);
    return { e, s, t, offered };
  }

  /**
   * One call of `SERVER__TOOL[@REV]`: the tool looked up, its arguments checked against the server's own schema
   * (before anything is asked or sent), the gate (`gate.run`, kind `mcp`, target `SERVER/TOOL`, the tool's
   * hints, the arguments as the question's preview), then forwarded.
   * @returns an InvokeResult: the value (structuredContent, else the text joined, else the content blocks), or
   *   the error (E_UNKNOWN_TOOL, E_INVALID_ARGS, E_CAPABILITY_DENIED, E_PAUSED, E_TOOL_FAILED when the tool said
   *   isError, E_MCP, E_MCP_TIMEOUT, E_MCP_CORS, E_MCP_UNREACHABLE, E_ABORTED).
   */
  async invoke(ref: string, args: unknown, opts: { signal?: AbortSignal; principal?: string } = {}): Promise<InvokeResult> {
    let revision: string | undefined;
    let outcome = 'refused';
    let server = '?';
    let tool = ref;
    try {
      const { e, s, t, offered } = await this.#find(ref, opts.signal);
      revision = offered.revision;
      server = e.def.name;
      tool = t.name;
      const checked = checkToolArguments(t.inputSchema, args);
      if (!checked.ok) throw new TyError('E_INVALID_ARGS', `${offered.name}: ${checked.message}`);
      const hash = await definitionHash('tool', t as unknown as Record<string, unknown>);
      const req: GateRequest = {
        principal: opts.principal ?? this.deps.principal,
        kind: 'mcp',
        toolName: offered.name,
        // decisions are kept per server URL and the tool's own definition: a changed tool is asked about again
        revision: `mcp:${e.def.name}:${(await definitionHash('resource', { uri: e.def.url })).slice(0, 16)}:sha256-${hash}`,
        target: `${e.def.name}/${t.name}`,
        hints: hintsOf(t),
        requested: true,
        hookPayload: { arguments: checked.args },
      };
      const rule = e.def.ask === 'none' ? `${e.def.name}: ask none` : e.def.allow.includes(t.name) ? `${e.def.name}: allow ${t.name}` : undefined;
      if (rule !== undefined) req.preapproved = { rule, scope: SERVER_RULE_SCOPE };
      const preview = previewOf(checked.args);
      if (preview !== undefined) req.preview = preview;
      const r = await this.deps.gate().run(req, () => {
        outcome = 'forwarded';
        return s.callTool(t.name, checked.args, opts.signal);
      }, opts.signal);
      const result = r.value;
      if (result.isError) {
        outcome = 'tool-error';
        const texts = (result.content ?? []).filter((c): c is { type: 'text'; text: string } => c.type === 'text').map((c) => c.text);
        return { ok: false, revision, error: { code: 'E_TOOL_FAILED', message: this.#scrub(texts.join('\n') || 'the MCP tool reported an error').slice(0, 4096) } };
      }
      outcome = 'ok';
      let value = resultValue(result);
      // a server that echoes a header value back never hands it on
      const json = JSON.stringify(value) ?? '';
      if ([...this.deps.withheld].some((v) => v.length > 0 && json.includes(v))) value = JSON.parse(this.#scrub(json)) as unknown;
      return { ok: true, revision, result: value, ...(r.feedback ? { feedback: r.feedback } : {}) };
    } catch (err) {
      const t = toTyError(err, 'E_MCP');
      outcome = outcome === 'forwarded' ? `failed:${t.code}` : `refused:${t.code}`;
      return { ok: false, ...(revision ? { revision } : {}), error: { code: t.code, message: this.#scrub(t.message), ...(t.data ? { data: t.data } : {}) } };
    } finally {
      this.#log(server, 'tools/call', tool, outcome);
    }
  }

  /** End every session. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#entries.values()].map((e) => this.#end(e)));
  }
}
