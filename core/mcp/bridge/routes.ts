// The bridge's routed requests (completion, resource subscriptions, logging level) and the relayed `instructions`;
// core, trusted side.
import type { DiscoverResult, InitializeResult, Server } from '@modelcontextprotocol/server';
import { TyError, toTyError } from '../../errors.js';
import type { Naming } from './naming.js';
import { inertText } from '../../ask/text.js';
import type { McpDefinition } from '../server-definition.js';
import type { UpstreamSession } from '../upstream/session.js';
import { combinedInstructions } from './instructions.js';
import { NAME_SEP } from './naming.js';

/** What the routed handlers need of one client session of the bridge. */
export interface RouteContext {
  naming: Naming;
  /** The definitions offered (one behind a proxy). */
  defs(): Promise<McpDefinition[]>;
  /** The definition a request names. @throws TyError E_UNKNOWN_TOOL when there is none. */
  definition(server: string): Promise<McpDefinition>;
  withUpstream<T>(def: McpDefinition, fn: (u: UpstreamSession) => Promise<T>, signal?: AbortSignal): Promise<T>;
  log(server: string, method: string, name: string | undefined, outcome: string): void;
  toMcpError(e: unknown): Error;
}

/** Longest `instructions` relayed from a server, characters. */
export const MAX_INSTRUCTIONS = 8192;

/**
 * Behind a proxy (one server), `initialize` carries that server's `instructions` (MCP "Lifecycle"), with
 * hidden and control characters made visible and cut at 8192 characters. The server is started for it;
 * one that cannot start leaves them out (its calls then say why). In front of several servers, each one's
 * instructions under its name (core/mcp/bridge/instructions.ts combinedInstructions), the whole cut at 8192.
 */
export function relayInstructions(server: Server, ctx: RouteContext): void {
  const single = async (): Promise<string | undefined> => {
    try {
      const [def] = await ctx.defs();
      const text = def === undefined ? undefined : await ctx.withUpstream(def, async (u) => u.instructions());
      if (typeof text === 'string' && text.length > 0) {
        const clean = inertText(text);
        return clean.length > MAX_INSTRUCTIONS ? `${clean.slice(0, MAX_INSTRUCTIONS)}… [cut]` : clean;
      }
    } catch {
      /* no instructions from a server that did not start */
    }
    return undefined;
  };
  const instructions = async (): Promise<string | undefined> => {
    if (ctx.naming.single !== undefined) return single();
    const defs = await ctx.defs().catch(() => []);
    const byName = new Map(defs.map((d) => [d.name, d]));
    return combinedInstructions(
      [...byName.keys()],
      (n) => ctx.withUpstream(byName.get(n)!, async (u) => u.instructions()),
      MAX_INSTRUCTIONS,
      NAME_SEP,
    );
  };
  // 2025-11-25: in the initialize result; 2026-07-28: in the server/discover result
  const internals = server as unknown as {
    _oninitialize(r: unknown): Promise<InitializeResult>;
    _ondiscover(): DiscoverResult | Promise<DiscoverResult>;
  };
  const ownInit = internals._oninitialize.bind(server);
  server.setRequestHandler('initialize', async (req) => {
    const result = await ownInit(req);
    const text = await instructions();
    return text === undefined ? result : { ...result, instructions: text };
  });
  const ownDiscover = internals._ondiscover.bind(server);
  server.setRequestHandler('server/discover', async () => {
    const result = await ownDiscover();
    const text = await instructions();
    return text === undefined ? result : { ...result, instructions: text };
  });
}

/**
 * `completion/complete` (routed by the prompt's name or the resource template's URI to its server, the
 * reference rewritten to the server's own), `resources/subscribe` / `unsubscribe` (routed by URI; updates
 * come back with the bridged URI) and `logging/setLevel` (forwarded to every offered server that declares
 * logging). None of them runs a tool or reads a resource, so none is gated; each is logged.
 */
export function installRouted(server: Server, ctx: RouteContext): void {
  server.setRequestHandler('completion/complete', async (req, ctx2) => {
    const ref = req.params.ref as { type: string; name?: string; uri?: string };
    const target =
      ref.type === 'ref/prompt' && typeof ref.name === 'string'
        ? ctx.naming.parseName(ref.name)
        : ref.type === 'ref/resource' && typeof ref.uri === 'string'
          ? (() => {
              const w = ctx.naming.parseUri(ref.uri);
              return w && { server: w.server, rest: w.uri };
            })()
          : undefined;
    if (target === undefined)
      throw ctx.toMcpError(
        new TyError('E_UNKNOWN_TOOL', 'completion/complete names no bridged prompt or resource template'),
      );
    let outcome = 'refused';
    try {
      const def = await ctx.definition(target.server);
      const own =
        ref.type === 'ref/prompt'
          ? { type: 'ref/prompt', name: target.rest }
          : { type: 'ref/resource', uri: target.rest };
      const r = await ctx.withUpstream(
        def,
        (u) => {
          if (!u.capabilities().completions)
            throw new TyError('E_UNKNOWN_TOOL', `server "${def.name}" offers no completions`);
          return u.complete({ ...req.params, ref: own }, ctx2.mcpReq.signal);
        },
        ctx2.mcpReq.signal,
      );
      outcome = 'ok';
      return r;
    } catch (e) {
      outcome = `failed:${toTyError(e, 'E_MCP').code}`;
      throw ctx.toMcpError(e);
    } finally {
      ctx.log(target.server, 'completion/complete', undefined, outcome);
    }
  });

  const subscription = (on: boolean) => async (req: { params: { uri: string } }, extra: { signal: AbortSignal }) => {
    const w = ctx.naming.parseUri(req.params.uri);
    if (w === undefined)
      throw ctx.toMcpError(new TyError('E_UNKNOWN_TOOL', 'resource URIs are the ones the bridge listed'));
    let outcome = 'refused';
    try {
      const def = await ctx.definition(w.server);
      await ctx.withUpstream(def, (u) => u.subscribe(w.uri, on, extra.signal), extra.signal);
      outcome = 'ok';
      return {};
    } catch (e) {
      outcome = `failed:${toTyError(e, 'E_MCP').code}`;
      throw ctx.toMcpError(e);
    } finally {
      ctx.log(w.server, on ? 'resources/subscribe' : 'resources/unsubscribe', undefined, outcome);
    }
  };
  server.setRequestHandler('resources/subscribe', (req, c) => subscription(true)(req, { signal: c.mcpReq.signal }));
  server.setRequestHandler('resources/unsubscribe', (req, c) => subscription(false)(req, { signal: c.mcpReq.signal }));

  server.setRequestHandler('logging/setLevel', async (req, ctx2) => {
    for (const def of await ctx.defs()) {
      try {
        await ctx.withUpstream(def, (u) => u.setLoggingLevel(req.params.level, ctx2.mcpReq.signal), ctx2.mcpReq.signal);
        ctx.log(def.name, 'logging/setLevel', undefined, 'ok');
      } catch (e) {
        ctx.log(def.name, 'logging/setLevel', undefined, `failed:${toTyError(e, 'E_MCP').code}`);
      }
    }
    return {};
  });
}
