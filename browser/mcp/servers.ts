// Remote MCP servers in the browser host: definitions with header secrets kept in memory, core's MCP bridge (core/mcp)
// over a Streamable HTTP connector, SERVER__TOOL offers, every call through the gate and audited; browser host, trusted
// side.
import type { CallToolResult, Tool } from '@modelcontextprotocol/client';
import { TyError, toTyError } from '../../core/errors.js';
import type { Gate } from '../../core/exec/runtime.js';
import type { Elicitor } from '../../core/mcp/input/elicit.js';
import type { InvokeResult } from '../../core/exec/invoke.js';
import type { SecretValues } from '../../core/capabilities/secrets.js';
import type { Store } from '../../core/store/contract.js';
import { sha256 } from 'multiformats/hashes/sha2';
import { NAME_SEP, prefixedNaming } from '../../core/mcp/bridge/naming.js';
import { SERVER_NAME_RE, type McpDefinition, type McpDefinitionSource } from '../../core/mcp/server-definition.js';
import { StoreDefinitionMemory } from '../../core/mcp/bridge/definitions.js';
import { revisionId } from '../../core/revisions/registry.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { BrowserBridge } from './bridge.js';

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
  /**
   * The CID of the tool's external-service manifest (name, description, schema): a call pinned to it refuses a changed
   * tool.
   */
  revision: string;
  /** The external-service manifest the model sees (name, description, parameters). */
  manifest: ToolManifest;
}

/** Server names: the command line's rule (1-32 of a-z, 0-9 and single dashes; core/mcp/server-definition.ts). */
export const MCP_SERVER_NAME_RE = SERVER_NAME_RE;
const HEADER_NAME_RE = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
/** Headers a page may not set (the Fetch standard's forbidden request headers) or that the transport owns. */
const RESERVED_HEADERS = new Set([
  'host',
  'origin',
  'referer',
  'cookie',
  'content-length',
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'connection',
]);
/** The bridge's client-context name: bridged calls run as principal `mcp:browser` (rules and audit). */
export const BROWSER_MCP_SANDBOX = 'browser';

interface Entry {
  def: McpDefinition;
  headers: { name: string; secret: string }[];
  /** sha-256 (hex) over the URL and the header names and secret names: a changed one ends older sessions. */
  fingerprint: string;
  info: McpServerInfo;
}

export interface BrowserMcpDeps {
  gate: Gate;
  /** Servers' elicitation requests answered by a person (core/mcp/input/elicit.ts); absent: refused. */
  elicit?: Pick<Elicitor, 'enabledFor' | 'elicit'>;
  store: Store;
  /** Where header values live (the host's MCP secret store; apart from the tools' secrets). */
  secrets: SecretValues;
  /** Pause tracking of the host (refusals the bridge itself makes count toward a tool's pause). */
  pause?: { check(tool: string): Promise<void>; recordRefusal(tool: string): Promise<boolean> };
  /**
   * One line per request (server, method, tool, outcome; core/mcp/wire/messages.ts requestLogLine); never arguments,
   * answers or header values.
   */
  log?: (line: string) => void;
  /** Header values in use (withheld from questions, audit and messages by the gate and the audit log). */
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
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback))
    throw new TyError('E_USAGE', `MCP server "${name}": the URL must be https (http only on loopback)`);
  if (u.username || u.password)
    throw new TyError('E_USAGE', `MCP server "${name}": credentials in the URL are refused; put them in a header`);
  u.hash = '';
  return u.href;
}

async function hex(text: string): Promise<string> {
  const d = await sha256.digest(new TextEncoder().encode(text));
  let out = '';
  for (const b of d.digest) out += b.toString(16).padStart(2, '0');
  return out;
}

/** `structuredContent`, else the text blocks joined, else the content array (what `invoke` returns). */
function resultValue(r: CallToolResult): unknown {
  const content = r.content ?? [];
  const texts = content.filter((c): c is { type: 'text'; text: string } => c.type === 'text').map((c) => c.text);
  if (r.structuredContent !== undefined) return r.structuredContent;
  if (texts.length === content.length) return texts.join('\n');
  return content;
}

const NEVER = new AbortController().signal;

/**
 * The browser host's MCP servers (`host.mcp`), on core's bridge (core/mcp McpBridge, loaded on first use): the
 * definitions live in memory (`McpDefinitionSource`), header values in the host's MCP secret store, and the
 * connector is the browser's Streamable HTTP one (browser/mcp/bridge.ts). Every `tools/call` goes through
 * `callBridged`, as on the command line: the tool looked up in the server's current list, the arguments checked
 * against its own schema (unlisted fields refused) before anything is asked or sent, then the gate (kind
 * `mcp`, target `SERVER/TOOL`, principal `mcp:browser`: deny rules and the pause first, the server's allow
 * list or ask none as a preapproved allow, else the inline question; a changed tool definition is asked about
 * again), audited, with the message rules on everything the server sends.
 */
export class BrowserMcp {
  readonly #entries = new Map<string, Entry>();
  readonly #listeners = new Set<(info: McpServerInfo[]) => void>();
  #bridge: Promise<{ bridge: BrowserBridge; sid: string }> | undefined;
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
    if (this.#entries.get(e.def.name) !== e) return;
    e.info = { ...e.info, ...patch };
    if (patch.state === 'connected' || patch.state === 'connecting' || patch.state === 'idle') delete e.info.error;
    this.#emit();
  }

  /** Every configured server with its connection state. */
  servers(): McpServerInfo[] {
    return [...this.#entries.values()].map((e) => structuredClone(e.info));
  }

  /** The bridge, made on first use: one client session for the page. */
  #core(): Promise<{ bridge: BrowserBridge; sid: string }> {
    if (this.#closed) return Promise.reject(new TyError('E_MCP', 'the host is closing'));
    this.#bridge ??= (async () => {
      // loaded only when a server is used: the SDK stays out of the page's first chunk
      const { BrowserBridge, browserConnector } = await import('./bridge.js');
      const source: McpDefinitionSource = {
        list: async () => [...this.#entries.keys()].sort(),
        load: async (n) => this.#entries.get(n)?.def,
        loadSync: (n) => this.#entries.get(n)?.def,
        fingerprint: (d) => this.#entries.get(d.name)?.fingerprint ?? 'removed',
      };
      const connect = browserConnector(async (d) => {
        const e = this.#entries.get(d.name);
        const out: Record<string, string> = {};
        for (const h of e?.headers ?? []) {
          const v = await this.deps.secrets.get(h.secret);
          if (v === undefined)
            throw new TyError(
              'E_SECRET_DENIED',
              `MCP server "${d.name}": the secret ${h.secret} for header ${h.name} has no value`,
              { secret: h.secret },
            );
          this.deps.withheld.add(v);
          out[h.name] = v;
        }
        return out;
      });
      const bridge = new BrowserBridge({
        source,
        connect,
        sandbox: BROWSER_MCP_SANDBOX,
        gate: this.deps.gate,
        // 2026-07-28 first; a server whose CORS policy refuses its headers is opened with the 2025 handshake
        legacyFallback: true,
        ...(this.deps.elicit ? { elicit: this.deps.elicit } : {}),
        definitions: new StoreDefinitionMemory(this.deps.store),
        ...(this.deps.pause ? { pause: this.deps.pause } : {}),
        ...(this.deps.log ? { log: this.deps.log } : {}),
      });
      return { bridge, sid: bridge.newSessionId() };
    })();
    return this.#bridge;
  }

  /**
   * Add (or replace) a server. Plain header values are stored in the host's MCP secret store at once under
   * `mcp.SERVER.N` and only their secret names are kept. Nothing is contacted yet.
   * @throws TyError E_USAGE (bad name, URL, header name, allow entry or secret name)
   */
  async add(s: BrowserMcpServer): Promise<McpServerInfo> {
    if (typeof s?.name !== 'string' || !MCP_SERVER_NAME_RE.test(s.name))
      throw new TyError(
        'E_USAGE',
        `"${String(s?.name).slice(0, 40)}" is not an MCP server name (1-32 of a-z, 0-9 and single dashes)`,
      );
    const url = checkUrl(s.name, s.url);
    const headers: { name: string; secret: string }[] = [];
    const values: [string, string][] = [];
    let n = 0;
    for (const [k, v] of Object.entries(s.headers ?? {})) {
      const lk = k.toLowerCase();
      if (!HEADER_NAME_RE.test(k) || RESERVED_HEADERS.has(lk) || lk.startsWith('sec-') || lk.startsWith('proxy-'))
        throw new TyError('E_USAGE', `MCP server "${s.name}": "${k.slice(0, 64)}" cannot be set as a header`);
      if (typeof v === 'string') {
        if (v.length === 0 || v.length > 8192 || /[\r\n\0]/.test(v))
          throw new TyError(
            'E_USAGE',
            `MCP server "${s.name}": the value of header ${k} is empty, too long, or has a line break`,
          );
        const secret = `mcp.${s.name}.${n++}`;
        values.push([secret, v]);
        headers.push({ name: k, secret });
      } else if (v && typeof v.secret === 'string' && /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/.test(v.secret))
        headers.push({ name: k, secret: v.secret });
      else throw new TyError('E_USAGE', `MCP server "${s.name}": header ${k} needs a value or { secret: NAME }`);
    }
    const allow = [...(s.allow ?? [])];
    for (const a of allow)
      if (typeof a !== 'string' || a.length === 0 || a.length > 256)
        throw new TyError('E_USAGE', `MCP server "${s.name}": allow entries are tool names`);
    const ask = s.ask ?? 'default';
    if (ask !== 'default' && ask !== 'none')
      throw new TyError('E_USAGE', `MCP server "${s.name}": ask is "default" or "none"`);
    const timeoutMs = s.timeoutMs ?? 60_000;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 600_000)
      throw new TyError('E_USAGE', `MCP server "${s.name}": timeoutMs is 100-600000`);
    // checked in full first: nothing is stored for a definition that is refused
    for (const [name, v] of values) await this.deps.secrets.set(name, v);
    const def: McpDefinition = {
      v: 1,
      name: s.name,
      url,
      args: [],
      env: {},
      allow,
      ask,
      shared: false,
      folder: '',
      timeoutMs,
    };
    // never over values: the fingerprint is part of decision identities (a replaced definition ends sessions itself)
    const fingerprint = await hex(JSON.stringify([url, headers]));
    const e: Entry = {
      def,
      headers,
      fingerprint,
      info: { name: s.name, url, headers: headers.map((h) => ({ ...h })), allow: [...allow], ask, state: 'idle' },
    };
    const replaced = this.#entries.has(s.name);
    this.#entries.set(s.name, e);
    if (replaced) await this.#endSessions(s.name);
    this.#emit();
    return structuredClone(e.info);
  }

  async #endSessions(name: string): Promise<void> {
    const c = await this.#bridge?.catch(() => undefined);
    if (c) await c.bridge.pool.end(`${c.sid}\0${name}`);
  }

  /**
   * Remove a server: its session ends and the header values stored for it (`mcp.SERVER.N`) are deleted. @returns false
   * when there was none.
   */
  async remove(name: string): Promise<boolean> {
    const e = this.#entries.get(name);
    if (!e) return false;
    this.#entries.delete(name);
    await this.#endSessions(name);
    for (const h of e.headers) if (h.secret.startsWith(`mcp.${name}.`)) await this.deps.secrets.delete(h.secret);
    this.#emit();
    return true;
  }

  /** The server's tools through the bridge, with its connection state kept. */
  async #tools(e: Entry, signal?: AbortSignal): Promise<Map<string, Tool>> {
    const first = e.info.state !== 'connected';
    if (first) this.#set(e, { state: 'connecting' });
    try {
      const { bridge, sid } = await this.#core();
      const { tools, protocolVersion } = await bridge.serverTools(sid, e.def.name, signal);
      this.#set(e, { state: 'connected', tools: tools.size, ...(protocolVersion ? { protocolVersion } : {}) });
      return tools;
    } catch (err) {
      const t = toTyError(err, 'E_MCP');
      if (t.code !== 'E_ABORTED')
        this.#set(e, { state: 'failed', error: { code: t.code, message: this.#scrub(t.message) } });
      throw new TyError(t.code, this.#scrub(t.message), t.data);
    }
  }

  /** Connect now (or reuse the session). @returns the server's state; a failure is in `state`/`error`, not thrown. */
  async connect(name: string, signal?: AbortSignal): Promise<McpServerInfo> {
    const e = this.#entries.get(name);
    if (!e) throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${name.slice(0, 40)}" is configured`);
    await this.#tools(e, signal).catch(() => undefined);
    return structuredClone(e.info);
  }

  async #offer(server: string, t: Tool): Promise<McpOfferedTool> {
    const name = prefixedNaming.name(server, t.name);
    const manifest: ToolManifest = {
      name,
      description: (t.description ?? t.title ?? `${t.name} of the MCP server ${server}`).slice(0, 4000),
      parameters: (t.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
      execution: { kind: 'external-service', serviceId: server, tool: t.name },
    };
    const o: McpOfferedTool = {
      name,
      server,
      tool: t.name,
      inputSchema: manifest.parameters,
      revision: await revisionId(manifest),
      manifest,
    };
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
    if (server !== undefined && entries[0] === undefined)
      throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${server.slice(0, 40)}" is configured`);
    for (const e of entries) {
      if (!e) continue;
      try {
        for (const t of (await this.#tools(e, signal)).values()) out.push(await this.#offer(e.def.name, t));
      } catch (err) {
        if (server !== undefined) throw err;
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
  async resolve(
    ref: string,
    signal?: AbortSignal,
  ): Promise<{ name: string; revision: string; manifest: ToolManifest }> {
    const { e, offered: o, tool } = await this.#find(ref, signal);
    if (!o) throw new TyError('E_UNKNOWN_TOOL', `MCP server "${e.def.name}" has no tool "${tool.slice(0, 80)}"`);
    return { name: o.name, revision: o.revision, manifest: o.manifest };
  }

  async #find(
    ref: string,
    signal?: AbortSignal,
  ): Promise<{ e: Entry; offered: McpOfferedTool | undefined; tool: string }> {
    const at = ref.indexOf('@');
    const name = at < 0 ? ref : ref.slice(0, at);
    const pinned = at < 0 ? undefined : ref.slice(at + 1);
    const p = prefixedNaming.parseName(name);
    const e = p ? this.#entries.get(p.server) : undefined;
    if (!p || !e)
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `no MCP server is configured for "${name.slice(0, 80)}" (tools are offered as SERVER${NAME_SEP}TOOL)`,
      );
    const t = (await this.#tools(e, signal)).get(p.rest);
    const offered = t ? await this.#offer(p.server, t) : undefined;
    if (pinned !== undefined && offered?.revision !== pinned)
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `${name} changed on its server since the call was made (revision ${pinned.slice(0, 16)}… is no longer offered); the model must call it again`,
      );
    return { e, offered, tool: p.rest };
  }

  /** `text` with every header value in use replaced by `<withheld>` (a server may echo a token back). */
  #scrub(text: string): string {
    let out = text;
    for (const v of this.deps.withheld) if (v.length > 0) out = out.split(v).join('<withheld>');
    return out;
  }

  /**
   * One call of `SERVER__TOOL[@REV]` through core's bridge (`callBridged`: the server's schema, the gate, the audit,
   * the message rules). A revision that is not the tool's current one is refused before anything is asked.
   * @returns an InvokeResult: the value (structuredContent, else the text joined, else the content blocks), or
   *   the error (E_UNKNOWN_TOOL, E_INVALID_ARGS, E_CAPABILITY_DENIED, E_PAUSED, E_TOOL_FAILED when the tool said
   *   isError, E_MCP, E_MCP_TIMEOUT, E_MCP_CORS, E_MCP_UNREACHABLE, E_ABORTED). Header values never appear in it.
   */
  async invoke(ref: string, args: unknown, opts: { signal?: AbortSignal } = {}): Promise<InvokeResult> {
    let revision: string | undefined;
    try {
      const { e, offered, tool } = await this.#find(ref, opts.signal);
      revision = offered?.revision;
      const { bridge, sid } = await this.#core();
      const result = await bridge.callBridged(sid, e.def.name, tool, args, opts.signal ?? NEVER);
      const rev = revision ? { revision } : {};
      if (result.isError) {
        const texts = (result.content ?? [])
          .filter((c): c is { type: 'text'; text: string } => c.type === 'text')
          .map((c) => c.text);
        const code = (result._meta as Record<string, unknown> | undefined)?.['tysandbox/code'];
        return {
          ok: false,
          ...rev,
          error: {
            code: typeof code === 'string' ? (code as 'E_TOOL_FAILED') : 'E_TOOL_FAILED',
            message: this.#scrub(texts.join('\n') || 'the MCP tool reported an error').slice(0, 4096),
          },
        };
      }
      let value = resultValue(result);
      // a server that echoes a header value back never hands it on
      const json = JSON.stringify(value) ?? '';
      if ([...this.deps.withheld].some((v) => v.length > 0 && json.includes(v)))
        value = JSON.parse(this.#scrub(json)) as unknown;
      return { ok: true, revision: revision ?? '', result: value };
    } catch (err) {
      const t = toTyError(err, 'E_MCP');
      return {
        ok: false,
        ...(revision ? { revision } : {}),
        error: { code: t.code, message: this.#scrub(t.message), ...(t.data ? { data: t.data } : {}) },
      };
    }
  }

  /** End every session. */
  async close(): Promise<void> {
    this.#closed = true;
    const c = await this.#bridge?.catch(() => undefined);
    await c?.bridge.close();
  }
}
