// An MCP server definition as the bridge sees it (name, how to reach it, its own rules) and the host interfaces that
// load and reach one; core, trusted side.
import { z } from 'zod';
import type { Transport } from '@modelcontextprotocol/client';
import type { Namespace } from './bridge/namespace.js';

/**
 * Server names: lower-case letters, digits and single dashes, 1-32 characters (no `_`: `SERVER__TOOL` stays
 * unambiguous).
 */
export const SERVER_NAME_RE = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,31}$/;
export const ServerNameSchema = z.string().regex(SERVER_NAME_RE, 'a server name is 1-32 of a-z, 0-9 and single dashes');
const ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** A saved definition. Any other field is refused on load. */
export const McpDefinitionSchema = z.strictObject({
  v: z.literal(1),
  name: ServerNameSchema,
  /** stdio: absolute path or a bare name looked up on the saved PATH (hosts that can start processes only). */
  command: z.string().min(1).max(4096).optional(),
  args: z.array(z.string().max(16384)).max(256),
  /** streamable HTTP endpoint (https, or http on loopback). */
  url: z.string().max(4096).optional(),
  /**
   * The server's whole environment (snapshot + --env); secret values, never printed. HTTP headers live here as
   * `TYMCP_HEADER_<n>` = `Name: value`.
   */
  env: z.record(z.string().regex(ENV_KEY_RE), z.string().max(65536)),
  /** Tool names (or `resources/read`, `prompts/get`) that pass without asking. */
  allow: z.array(z.string().min(1).max(256)).max(256),
  /** `none`: every call passes without asking. */
  ask: z.enum(['default', 'none']),
  shared: z.boolean(),
  /** The folder it was added from (recorded for identity only; a process server runs in `/`). */
  folder: z.string().max(4096),
  /** How long the bridge waits for one answer (reset by progress), ms; past it the session ends (default 60 000). */
  timeoutMs: z.number().int().min(100).max(86_400_000).optional(),
});
export type McpDefinition = z.infer<typeof McpDefinitionSchema>;

/**
 * Protocol revisions the bridge speaks, newest first: 2026-07-28 (stateless: every request carries its version
 * and the client's capabilities in `_meta`, `server/discover` says what is offered) and the handshake era
 * (`initialize`) down to 2024-11-05. Negotiated per peer, on each side of the bridge.
 */
export const BRIDGE_PROTOCOL_VERSIONS: readonly string[] = [
  '2026-07-28',
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
];

/** Default bridge call timeout, ms: past it a server session is ended and the next call starts a new one. */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;

/** Headers kept in the definition's environment as `TYMCP_HEADER_<n>` = `Name: value`. */
export function headersFromEnv(env: Record<string, string>): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!/^TYMCP_HEADER_\d{1,3}$/.test(k)) continue;
    const i = v.indexOf(':');
    if (i > 0) h[v.slice(0, i).trim()] = v.slice(i + 1).trim();
  }
  return h;
}

/**
 * Where a bridge finds its server definitions and namespaces (each host keeps them its own way: files of the
 * settings folder on the command line, the host's store in the browser). Every gated request loads its
 * definition again, so a removed server is refused and a changed one ends older sessions.
 */
export interface McpDefinitionSource {
  /** Names of every defined server, sorted. */
  list(): Promise<string[]>;
  /** One definition, or undefined when there is none. @throws TyError E_INVALID_SETTINGS for a damaged one. */
  load(name: string): Promise<McpDefinition | undefined>;
  /**
   * `load` without an await (the direct path of a tools/call); a source that cannot: undefined, the call then takes the
   * async path.
   */
  loadSync?(name: string): McpDefinition | undefined;
  /**
   * What identifies a running server (how it is reached, its environment): a changed fingerprint ends older sessions.
   * Stable across runs (decisions are stored under it).
   */
  fingerprint(def: McpDefinition): string;
  /** Namespace names and documents (a source without namespaces: none). */
  listNamespaces?(): Promise<string[]>;
  loadNamespace?(name: string): Promise<Namespace | undefined>;
  /**
   * Call `changed` when a definition or namespace is added, removed or changed; returns a function that stops watching.
   */
  watch?(changed: () => void, opts: { only?: string }): () => void;
}

/** What a connector is told about one connection. */
export interface ConnectContext {
  /**
   * A server message the rules dropped or answered (method only); a connector applies core/mcp/wire/messages.ts
   * serverMessageRule (see RuledTransport).
   */
  onFiltered?: (what: { action: 'drop' | 'answer'; method?: string | undefined }) => void;
  signal?: AbortSignal;
  /**
   * Server requests the session answers itself instead of the message rules refusing them (`elicitation/create` for a
   * person).
   */
  passRequests?: ReadonlySet<string>;
  /**
   * `legacy`: this connection opens with the 2025 handshake at once, whatever the connector would choose (a fallback).
   */
  negotiation?: 'legacy';
}

/**
 * Transport to one upstream server, the server-message rules already applied to what it delivers. It may carry
 * `pid` (a process group id) and `endReason` (why the transport ended the session, e.g. an oversize message).
 */
export type UpstreamTransport = Transport & {
  readonly pid?: number | undefined;
  readonly endReason?: Error | undefined;
  /**
   * How the protocol era is chosen with this server: `auto` (default: a `server/discover` probe, 2026-07-28 when
   * the server answers it, else the 2025 initialize handshake) or `legacy` (the handshake at once, no 2026-07-28
   * request or header on the wire).
   */
  readonly negotiation?: 'auto' | 'legacy' | undefined;
};

/**
 * "Connect to upstream server X": each host supplies one. Core's streamableHttpConnector (fetch-based, both
 * hosts) reaches `url` definitions; the command line's also starts `command` servers and shared hubs.
 * @throws TyError E_MCP when the definition cannot be reached on this host.
 */
export type UpstreamConnector = (def: McpDefinition, ctx: ConnectContext) => Promise<UpstreamTransport>;
