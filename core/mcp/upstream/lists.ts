// What an upstream session lists of its server, kept until the server says a list changed: its tools (names and schemas
// checked, descriptions made inert), prompts, resources and resource templates (every page, bounded); core, trusted
// side.
import type {
  ListPromptsResult,
  ListResourceTemplatesResult,
  ListResourcesResult,
  ListToolsResult,
  ServerCapabilities,
} from '@modelcontextprotocol/client';
import { TyError } from '../../errors.js';
import { inertText } from '../../ask/text.js';
import { checkToolSchema } from '../bridge/args.js';
import { paramHeaders } from '../wire/http-headers.js';
import { MAX_LISTED, TOOL_NAME_RE, type UpstreamOptions, type UpstreamTool } from './options.js';

/** Where the listings come from: one page of each list from the server (core/mcp/upstream/session.ts). */
export interface ListSource {
  /** The server's name (in error messages). */
  readonly server: string;
  listTools(cursor: string | undefined, signal?: AbortSignal): Promise<ListToolsResult>;
  listPrompts(cursor: string | undefined, signal?: AbortSignal): Promise<ListPromptsResult>;
  listResources(cursor: string | undefined, signal?: AbortSignal): Promise<ListResourcesResult>;
  listResourceTemplates(cursor: string | undefined, signal?: AbortSignal): Promise<ListResourceTemplatesResult>;
  /** The server's capabilities from the handshake (a list it does not offer is empty). */
  capabilities(): ServerCapabilities;
  /** A listed tool left out, with why. */
  readonly onToolRefused?: UpstreamOptions['onToolRefused'];
}

/** One session's cached listings. */
export class ServerLists {
  private toolCache: Map<string, UpstreamTool> | undefined;
  private promptCache: Promise<Map<string, Record<string, unknown>>> | undefined;
  private templateCache: Promise<Map<string, Record<string, unknown>>> | undefined;
  private resourceCache: Promise<Map<string, Record<string, unknown>>> | undefined;
  /** Listed tools hidden for an unusable schema, with the reason (their calls are refused with -32602). */
  private refusedCache = new Map<string, string>();

  constructor(private readonly source: ListSource) {}

  /** A server's list_changed notification (`method`): the list it names is fetched again when next needed. */
  changed(method: string): void {
    if (method === 'notifications/tools/list_changed') this.toolCache = undefined;
    if (method === 'notifications/prompts/list_changed') this.promptCache = undefined;
    if (method === 'notifications/resources/list_changed') {
      this.resourceCache = undefined;
      this.templateCache = undefined;
    }
  }

  /** A tool from the cached list, without asking the server (undefined when not cached or not listed). */
  cachedTool(name: string): UpstreamTool | undefined {
    return this.toolCache?.get(name);
  }

  /**
   * The server's usable tools (cached until it says the list changed). A tool whose inputSchema or
   * outputSchema cannot be used (core/schema/validate.ts) (a backreference or lookaround in a pattern, an
   * invalid schema) is left out and reported once per listing through `onToolRefused`; see `refusedTool`.
   */
  async tools(signal?: AbortSignal): Promise<Map<string, UpstreamTool>> {
    if (this.toolCache) return this.toolCache;
    const map = new Map<string, UpstreamTool>();
    const refused = new Map<string, string>();
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const r = await this.source.listTools(cursor, signal);
      for (const t of r.tools) {
        // a name listed twice: neither is offered (which one a call would reach is not knowable)
        if (seen.has(t.name)) {
          if (!refused.has(t.name)) {
            map.delete(t.name);
            refused.set(t.name, 'is listed more than once by the server');
            this.source.onToolRefused?.(t.name, 'is listed more than once by the server; neither is offered');
          }
          continue;
        }
        seen.add(t.name);
        // Names as MCP recommends (1-128 of A-Z a-z 0-9 _ - . /): anything else (controls, escapes, spaces) is refused.
        const badName = TOOL_NAME_RE.test(t.name)
          ? undefined
          : 'its name is not 1-128 characters of A-Z, a-z, 0-9, _, -, ., /';
        const headers = paramHeaders(t.inputSchema);
        const problem =
          badName ??
          checkToolSchema(t.inputSchema) ??
          checkToolSchema(t.outputSchema) ??
          (headers.ok ? undefined : `its x-mcp-header declarations are invalid: ${headers.message}`);
        if (problem === undefined) {
          // Descriptions and titles pass on as text, with hidden and control characters made visible.
          if (typeof t.description === 'string') t.description = inertText(t.description);
          if (typeof t.title === 'string') t.title = inertText(t.title);
          map.set(t.name, t);
        } else {
          refused.set(t.name, problem);
          this.source.onToolRefused?.(t.name, problem);
        }
      }
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    this.toolCache = map;
    this.refusedCache = refused;
    return map;
  }

  /** Why a listed tool was hidden (undefined when it was not). Valid after `tools()`. */
  refusedTool(name: string): string | undefined {
    return this.refusedCache.get(name);
  }

  /**
   * A prompt's definition as the server lists it (every page, at most 50), cached until the server says
   * the prompt list changed; undefined when it is not listed.
   */
  async promptDefinition(name: string, signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    if (!this.source.capabilities().prompts) return undefined;
    this.promptCache ??= this.allPages(async (cursor) => {
      const r = await this.source.listPrompts(cursor, signal);
      return { items: r.prompts.map((p) => [p.name, p as Record<string, unknown>] as const), next: r.nextCursor };
    }).catch((e: unknown) => {
      this.promptCache = undefined;
      throw e;
    });
    return (await this.promptCache).get(name);
  }

  /** A listed resource's definition by URI (cached like promptDefinition); undefined when not listed. */
  async resourceDefinition(uri: string, signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    if (!this.source.capabilities().resources) return undefined;
    this.resourceCache ??= this.allPages(async (cursor) => {
      const r = await this.source.listResources(cursor, signal);
      return { items: r.resources.map((x) => [x.uri, x as Record<string, unknown>] as const), next: r.nextCursor };
    }).catch((e: unknown) => {
      this.resourceCache = undefined;
      throw e;
    });
    return (await this.resourceCache).get(uri);
  }

  /** Every listed prompt (all pages, cached until the server says the list changed). */
  async allPrompts(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    if (!this.source.capabilities().prompts) return [];
    await this.promptDefinition('', signal);
    return [...((await this.promptCache)?.values() ?? [])];
  }

  /** Every listed resource (all pages, cached until the server says the list changed). */
  async allResources(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    if (!this.source.capabilities().resources) return [];
    await this.resourceDefinition('', signal);
    return [...((await this.resourceCache)?.values() ?? [])];
  }

  /** Every listed resource template (all pages, cached until the server says the resource list changed). */
  async allTemplates(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    if (!this.source.capabilities().resources) return [];
    this.templateCache ??= this.allPages(async (cursor) => {
      const r = await this.source.listResourceTemplates(cursor, signal);
      return {
        items: r.resourceTemplates.map((x) => [x.uriTemplate, x as Record<string, unknown>] as const),
        next: r.nextCursor,
      };
    }).catch((e: unknown) => {
      this.templateCache = undefined;
      throw e;
    });
    return [...(await this.templateCache).values()];
  }

  /** Pages of a listing, at most 50 pages and MAX_LISTED items (more: E_MCP, never a silent cut). */
  private async allPages(
    page: (
      cursor: string | undefined,
    ) => Promise<{ items: (readonly [string, Record<string, unknown>])[]; next?: string | undefined }>,
  ): Promise<Map<string, Record<string, unknown>>> {
    const out = new Map<string, Record<string, unknown>>();
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const r = await page(cursor);
      for (const [k, v] of r.items) out.set(k, v);
      if (out.size > MAX_LISTED)
        throw new TyError('E_MCP', `server "${this.source.server}" lists more than ${MAX_LISTED} entries; refused`);
      cursor = r.next;
      if (!cursor) break;
    }
    return out;
  }
}
