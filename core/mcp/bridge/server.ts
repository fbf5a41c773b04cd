// One SDK Server per client session of the MCP bridge: what it offers (registered tools, bridged servers' tools,
// prompts and resources, namespaces) and each request handed to the bridge part that owns it; core, trusted side.
import {
  Server,
  type CallToolResult,
  type GetPromptResult,
  type Prompt,
  type Resource,
  type ResourceTemplateType,
  type Tool,
} from '@modelcontextprotocol/server';
import { TyError, toTyError } from '../../errors.js';
import { TOOL_EXECUTION_CODES, clientMessage, toolErrorResult } from './results.js';
import { NAME_SEP, mapPromptResult } from './naming.js';
import { BRIDGE_SERVER_INFO, type BridgeContext } from './context.js';
import { PREVIEW_CHARS, gated, previewOf } from './gate.js';
import type { CallBridged } from './calls.js';
import type { NamespaceCalls } from './namespace-calls.js';
import type { NotificationRelay } from './notify.js';
import { installRouted, relayInstructions, type RouteContext } from './routes.js';
import { RpcFailure } from '../wire/errors.js';
import { ENVELOPE_CAPABILITIES_KEY, RPC } from '../wire/messages.js';
import { callTakingInput, isRelayed, relayedCapabilities } from '../input/relay.js';
import type { InputRounds } from '../input/rounds.js';
import type { Suspensions } from '../input/suspensions.js';
import { BRIDGE_PROTOCOL_VERSIONS, type McpDefinition } from '../server-definition.js';
import type { UpstreamSession } from '../upstream/session.js';

/** The bridge parts a client session's requests go to. */
export interface ServerParts {
  /** The bridge's callBridged (core/mcp/bridge/calls.ts BridgedCalls.call, through the bridge's public method). */
  callBridged: CallBridged;
  namespaces: NamespaceCalls;
  rounds: InputRounds;
  suspensions: Suspensions;
  notifications: NotificationRelay;
}

/** Makes each client session's SDK Server and notes the protocol revision each session speaks. */
export class SessionServers {
  /** Client sessions whose protocol revision was logged. */
  private readonly clientProtocol = new Set<string>();

  constructor(
    private readonly ctx: BridgeContext,
    private readonly parts: ServerParts,
  ) {}

  /** Build the SDK Server for one client session. Connect it to a guarded transport (see node/mcp/serve.ts). */
  create(sessionId: string): Server {
    // both eras: 2026-07-28 (per-request envelope, server/discover) and the 2025 initialize handshake
    const server = new Server(
      { ...BRIDGE_SERVER_INFO },
      {
        capabilities: {
          tools: { listChanged: true },
          prompts: { listChanged: true },
          resources: { listChanged: true, subscribe: true },
          logging: {},
          completions: {},
        },
        supportedProtocolVersions: [...BRIDGE_PROTOCOL_VERSIONS],
      },
    );
    this.ctx.servers.set(sessionId, server);
    // the revision each client session speaks: the handshake's, or (2026-07-28) its first envelope's
    server.oninitialized = () => this.noteClientProtocol(sessionId, server.getNegotiatedProtocolVersion() ?? 'unknown');
    // a server added, removed or defined again changes what every client session can list
    this.parts.notifications.watchDefinitions();
    const defs = async (): Promise<McpDefinition[]> => {
      const out: McpDefinition[] = [];
      const single = this.ctx.naming.single;
      for (const n of single !== undefined ? [single] : await this.ctx.opts.source.list()) {
        try {
          const d = await this.ctx.opts.source.load(n);
          if (d) out.push(d);
        } catch (e) {
          this.ctx.log(n, 'load', undefined, `refused:${toTyError(e, 'E_INVALID_SETTINGS').code}`);
        }
      }
      return out;
    };
    const eachServer = async <T>(
      method: string,
      signal: AbortSignal,
      fn: (d: McpDefinition, u: UpstreamSession) => Promise<T[]>,
    ): Promise<T[]> => {
      const all: T[] = [];
      for (const d of await defs()) {
        try {
          all.push(...(await this.ctx.withUpstream(sessionId, d, (u) => fn(d, u), signal)));
          this.ctx.log(d.name, method, undefined, 'ok');
        } catch (e) {
          this.ctx.log(d.name, method, undefined, `failed:${toTyError(e, 'E_MCP').code}`);
          // one server behind a proxy: its failure is the answer; several: the others still list
          if (this.ctx.naming.single !== undefined) throw this.ctx.mcpError(e);
        }
      }
      return all;
    };
    const routes: RouteContext = {
      naming: this.ctx.naming,
      defs,
      definition: (name) => this.ctx.definition(sessionId, name),
      withUpstream: (def, fn, signal) => this.ctx.withUpstream(sessionId, def, fn, signal),
      log: (s, m, n, o) => this.ctx.log(s, m, n, o),
      toMcpError: (e: unknown) => this.ctx.mcpError(e),
    };
    relayInstructions(server, routes);
    installRouted(server, routes);

    server.setRequestHandler('tools/list', async (_req, ctx) => {
      const bridged = await eachServer('tools/list', ctx.mcpReq.signal, async (d, u) =>
        [...(await u.tools(ctx.mcpReq.signal)).values()].map(
          (t) => ({ ...t, name: this.ctx.naming.name(d.name, t.name) }) as Tool,
        ),
      );
      if (this.ctx.naming.single !== undefined) return { tools: bridged };
      const names = new Set(await this.ctx.opts.source.list());
      const spaces = await this.parts.namespaces.tools(sessionId, names, ctx.mcpReq.signal);
      // `SERVER__TOOL` names belong to bridged servers and namespaces: a registered tool named with `__` is
      // never offered (whether or not such a server exists now), so a name always means one thing
      const local = this.ctx.opts.local
        ? (await this.ctx.opts.local.list()).filter((t) => {
            if (!t.name.includes(NAME_SEP)) return true;
            this.ctx.log('local', 'tools/list', t.name, 'hidden:name-has-separator');
            return false;
          })
        : [];
      return { tools: [...local, ...bridged, ...spaces] };
    });

    server.setRequestHandler('tools/call', async (req, ctx) => {
      const name = req.params.name;
      const split = this.ctx.naming.parseName(name);
      let def: McpDefinition | undefined;
      let known = false;
      if (split !== undefined) {
        try {
          def = await this.ctx.opts.source.load(split.server);
          known = def !== undefined;
        } catch {
          known = true; // refused inside BridgedCalls with its stable code
        }
      }
      // a removed server: its sessions in this client session end too
      if (split !== undefined && !known) await this.ctx.pool.end(this.ctx.poolKey(sessionId, split.server));
      if (this.ctx.naming.single !== undefined && !known)
        throw this.ctx.mcpError(
          new TyError(
            'E_UNKNOWN_TOOL',
            `no MCP server "${split?.server.slice(0, 40)}" is defined (it may have been removed)`,
          ),
        );
      try {
        if (split !== undefined && known) {
          const token = ctx.mcpReq._meta?.progressToken;
          // progress is relayed in order, and all of it before the result
          let relayed: Promise<void> = Promise.resolve();
          const onprogress =
            token === undefined
              ? undefined
              : (p: { progress: number; total?: number; message?: string }) => {
                  relayed = relayed
                    .then(() =>
                      ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, ...p } }),
                    )
                    .catch(() => undefined);
                };
          // a 2026-07-28 client can take input requests (multi-round-trip); a retry brings answers and the state
          const round = await this.parts.rounds.round(
            sessionId,
            split.server,
            split.rest,
            req.params.arguments,
            ctx.mcpReq,
          );
          const result =
            round?.suspension !== undefined
              ? await this.parts.suspensions.resume(split.server, split.rest, round)
              : await this.parts.callBridged(
                  sessionId,
                  split.server,
                  split.rest,
                  req.params.arguments,
                  ctx.mcpReq.signal,
                  onprogress,
                  def,
                  round,
                );
          await relayed;
          if (isRelayed(result)) {
            // the client's capabilities were stripped before this Server saw the request; the SDK Server checks the
            // input requests it answers against the envelope: it is told of the kinds relayed, which the client
            // declared
            const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
            if (envelope !== undefined)
              envelope[ENVELOPE_CAPABILITIES_KEY] = relayedCapabilities(result, round?.clientCapabilities ?? {});
            return (await this.parts.rounds.relayedAnswer(
              sessionId,
              split.server,
              split.rest,
              req.params.arguments,
              result,
            )) as unknown as CallToolResult;
          }
          return result;
        }
        if (
          split !== undefined &&
          (await (this.ctx.opts.source.loadNamespace?.(split.server) ?? Promise.resolve(undefined)).catch(
            () => undefined,
          )) !== undefined
        ) {
          return await this.parts.namespaces.call(
            sessionId,
            split.server,
            split.rest,
            req.params.arguments,
            ctx.mcpReq.signal,
          );
        }
        if (this.ctx.opts.local && name.includes(NAME_SEP)) {
          this.ctx.log('local', 'tools/call', name, 'refused:E_UNKNOWN_TOOL');
          throw new TyError(
            'E_UNKNOWN_TOOL',
            `no tool "${name.slice(0, 80)}": names with "${NAME_SEP}" are SERVER${NAME_SEP}TOOL (no such ` +
              `server or namespace); registered tools named with "${NAME_SEP}" are not offered over MCP, rename ` +
              `the tool`,
          );
        }
        if (this.ctx.opts.local) {
          const args = req.params.arguments ?? {};
          try {
            const r = await this.ctx.opts.local.call(name, args, ctx.mcpReq.signal);
            this.ctx.log('local', 'tools/call', name, r.isError ? 'tool-error' : 'ok');
            return r;
          } catch (e) {
            const t = toTyError(e, 'E_MCP');
            if (TOOL_EXECUTION_CODES.has(t.code)) {
              this.ctx.log('local', 'tools/call', name, `tool-error:${t.code}`);
              return toolErrorResult(t.code, clientMessage(t, this.ctx.opts.hint));
            }
            this.ctx.log('local', 'tools/call', name, `refused:${t.code}`);
            throw e;
          }
        }
        this.ctx.log(split?.server ?? 'local', 'tools/call', name, 'refused:E_UNKNOWN_TOOL');
        throw new TyError('E_UNKNOWN_TOOL', `no tool "${name.slice(0, 80)}"`);
      } catch (e) {
        throw this.ctx.mcpError(e);
      }
    });

    server.setRequestHandler('prompts/list', async (_req, ctx) => ({
      // every page of every server (bounded in UpstreamSession.allPages), so nothing is dropped
      prompts: await eachServer('prompts/list', ctx.mcpReq.signal, async (d, u) =>
        (await u.allPrompts(ctx.mcpReq.signal)).map(
          (p) => ({ ...p, name: this.ctx.naming.name(d.name, String(p.name)) }) as Prompt,
        ),
      ),
    }));

    server.setRequestHandler('prompts/get', async (req, ctx) => {
      const split = this.ctx.naming.parseName(req.params.name);
      if (!split)
        throw new RpcFailure(RPC.INVALID_PARAMS, 'prompt names are SERVER__PROMPT', { code: 'E_UNKNOWN_TOOL' });
      let outcome = 'refused';
      try {
        const def = await this.ctx.definition(sessionId, split.server);
        // a 2026-07-28 client can take input requests on prompts/get too (bound to the prompt, not a tool)
        const bound = `prompts/get:${split.rest}`;
        const round = await this.parts.rounds.round(sessionId, split.server, bound, req.params.arguments, ctx.mcpReq);
        // postToolUse feedback has no place in a prompt result: the hooks run, their output is not sent
        const definition = await this.ctx
          .withUpstream(sessionId, def, (u) => u.promptDefinition(split.rest, ctx.mcpReq.signal), ctx.mcpReq.signal)
          .catch(() => undefined);
        const { value: r } = await gated(
          this.ctx,
          def,
          'mcp-prompt',
          split.rest,
          {
            preview: previewOf(req.params.arguments),
            input: { arguments: req.params.arguments ?? {} },
            ...(definition ? { definition } : {}),
          },
          ctx.mcpReq.signal,
          () => {
            outcome = 'forwarded';
            return this.ctx.withUpstream(
              sessionId,
              def,
              (u): Promise<unknown> =>
                u.era === 'modern' && (round !== undefined || this.ctx.opts.elicit !== undefined)
                  ? callTakingInput(
                      this.ctx.opts.elicit,
                      split.server,
                      round,
                      ctx.mcpReq.signal,
                      (input) => u.getPromptTakingInput(split.rest, req.params.arguments, input, ctx.mcpReq.signal),
                      (o) => this.ctx.log(split.server, 'prompts/get', split.rest, o),
                    )
                  : u.getPrompt(split.rest, req.params.arguments, ctx.mcpReq.signal),
              ctx.mcpReq.signal,
            );
          },
        );
        if (isRelayed(r)) {
          outcome = 'input-required';
          const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
          if (envelope !== undefined)
            envelope[ENVELOPE_CAPABILITIES_KEY] = relayedCapabilities(r, round?.clientCapabilities ?? {});
          return (await this.parts.rounds.relayedAnswer(
            sessionId,
            split.server,
            bound,
            req.params.arguments,
            r,
          )) as unknown as GetPromptResult;
        }
        outcome = 'ok';
        return mapPromptResult(r as GetPromptResult, split.server, this.ctx.naming);
      } catch (e) {
        if (outcome === 'refused') outcome = `refused:${toTyError(e, 'E_MCP').code}`;
        throw this.ctx.mcpError(e);
      } finally {
        this.ctx.log(split.server, 'prompts/get', split.rest, outcome);
      }
    });

    server.setRequestHandler('resources/list', async (_req, ctx) => ({
      resources: await eachServer('resources/list', ctx.mcpReq.signal, async (d, u) =>
        (await u.allResources(ctx.mcpReq.signal)).map(
          (r) => ({ ...r, uri: this.ctx.naming.uri(d.name, String(r.uri)) }) as Resource,
        ),
      ),
    }));

    server.setRequestHandler('resources/templates/list', async (_req, ctx) => ({
      // a template's URI is mapped like a resource's: filled in by the client, it reads back through the bridge
      resourceTemplates: await eachServer('resources/templates/list', ctx.mcpReq.signal, async (d, u) =>
        (await u.allTemplates(ctx.mcpReq.signal)).map(
          (t) =>
            ({
              ...t,
              name: this.ctx.naming.single !== undefined ? t.name : this.ctx.naming.name(d.name, String(t.name)),
              uriTemplate: this.ctx.naming.uri(d.name, String(t.uriTemplate)),
            }) as ResourceTemplateType,
        ),
      ),
    }));

    server.setRequestHandler('resources/read', async (req, ctx) => {
      const w = this.ctx.naming.parseUri(req.params.uri);
      if (!w)
        throw new RpcFailure(RPC.INVALID_PARAMS, 'resource URIs are the tymcp: ones the bridge listed', {
          code: 'E_UNKNOWN_TOOL',
        });
      let outcome = 'refused';
      try {
        const def = await this.ctx.definition(sessionId, w.server);
        // postToolUse feedback has no place in a resource result: the hooks run, their output is not sent
        const definition = await this.ctx
          .withUpstream(sessionId, def, (u) => u.resourceDefinition(w.uri, ctx.mcpReq.signal), ctx.mcpReq.signal)
          .catch(() => undefined);
        const { value: r } = await gated(
          this.ctx,
          def,
          'mcp-resource',
          w.uri,
          {
            preview: `uri: ${w.uri.slice(0, PREVIEW_CHARS)}`,
            input: { uri: w.uri },
            ...(definition ? { definition } : {}),
          },
          ctx.mcpReq.signal,
          () => {
            outcome = 'forwarded';
            return this.ctx.withUpstream(
              sessionId,
              def,
              (u) => u.readResource(w.uri, ctx.mcpReq.signal),
              ctx.mcpReq.signal,
            );
          },
        );
        outcome = 'ok';
        return { ...r, contents: r.contents.map((c) => ({ ...c, uri: this.ctx.naming.uri(w.server, c.uri) })) };
      } catch (e) {
        if (outcome === 'refused') outcome = `refused:${toTyError(e, 'E_MCP').code}`;
        throw this.ctx.mcpError(e);
      } finally {
        this.ctx.log(w.server, 'resources/read', undefined, outcome);
      }
    });

    return server;
  }

  /**
   * Log the protocol revision a client session speaks, once per session (`{"server":"client","method":
   * "session","outcome":"protocol:2026-07-28"}`).
   */
  noteClientProtocol(sessionId: string, version: string): void {
    if (this.clientProtocol.has(sessionId)) return;
    this.clientProtocol.add(sessionId);
    this.ctx.log('client', 'session', undefined, `protocol:${version}`);
  }

  /** A client session ended: its revision may be logged again under a new session. */
  endSession(sessionId: string): void {
    this.clientProtocol.delete(sessionId);
  }
}
