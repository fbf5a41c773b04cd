// The client-facing MCP bridge: one SDK Server per client session offering registered tools and bridged servers' tools,
// every call checked and gated, transports injected; core, trusted side.
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
import { checkToolArguments } from './args.js';
import { TOOL_EXECUTION_CODES, clientMessage, toolErrorResult } from './results.js';
import { NAME_SEP, mapPromptResult, mapToolResult } from './naming.js';
import {
  ENVELOPE_CAPABILITIES_KEY,
  RPC,
  declaredCapabilities,
  encodeModernToolResult,
  toolCallParams,
} from '../wire/messages.js';
import { callTakingInput, isRelayed, relayedCapabilities, type CallRound, type RelayedInput } from '../input/relay.js';
import type { McpDefinition } from '../server-definition.js';
import type { UpstreamSession } from '../upstream/session.js';
import { installRouted, relayInstructions, type RouteContext } from './routes.js';
import { BridgeCalls } from './calls.js';

export type { BridgeOptions } from './context.js';

/** The bridge's implementation identity (initialize and server/discover results; 2026-07-28 results' `_meta`). */
export const BRIDGE_SERVER_INFO: Readonly<{ name: string; version: string }> = Object.freeze({
  name: 'tysandbox',
  version: '0.1.0',
});
/** The first protocol revision of the stateless era (per-request `_meta` envelope). */
const MODERN_REVISION = '2026-07-28';
import { BRIDGE_PROTOCOL_VERSIONS, CallAbort, PREVIEW_CHARS, RpcFailure, previewOf, type DirectPath } from './util.js';

/**
 * Holds the bounded pool of server sessions for one sandbox and makes one SDK Server per client
 * session. Every gated request reloads the server's definition (a removed server is refused; a changed one
 * ends older sessions), checks arguments against the tool's own schema (unlisted fields refused), then
 * runs it through the gate (`gate.run`: deny rules and the pause first, the definition's own rule only
 * replacing the question, hooks, audit). Hosts construct it with their McpDefinitionSource and
 * UpstreamConnector (see core/mcp/index.ts).
 */
export class McpBridge extends BridgeCalls {
  /** Build the SDK Server for one client session. Connect it to a guarded transport (see node/mcp/serve.ts). */
  createServer(sessionId: string): Server {
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
    this.servers.set(sessionId, server);
    // the revision each client session speaks: the handshake's, or (2026-07-28) its first envelope's
    server.oninitialized = () => this.noteClientProtocol(sessionId, server.getNegotiatedProtocolVersion() ?? 'unknown');
    // a server added, removed or defined again changes what every client session can list
    this.unwatch ??= this.opts.source.watch?.(
      () => void this.listsChanged(),
      this.naming.single !== undefined ? { only: this.naming.single } : {},
    );
    const defs = async (): Promise<McpDefinition[]> => {
      const out: McpDefinition[] = [];
      const single = this.naming.single;
      for (const n of single !== undefined ? [single] : await this.opts.source.list()) {
        try {
          const d = await this.opts.source.load(n);
          if (d) out.push(d);
        } catch (e) {
          this.log(n, 'load', undefined, `refused:${toTyError(e, 'E_INVALID_SETTINGS').code}`);
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
          all.push(...(await this.withUpstream(sessionId, d, (u) => fn(d, u), signal)));
          this.log(d.name, method, undefined, 'ok');
        } catch (e) {
          this.log(d.name, method, undefined, `failed:${toTyError(e, 'E_MCP').code}`);
          // one server behind a proxy: its failure is the answer; several: the others still list
          if (this.naming.single !== undefined) throw this.mcpError(e);
        }
      }
      return all;
    };
    const ctx: RouteContext = {
      naming: this.naming,
      defs,
      definition: (name) => this.definition(sessionId, name),
      withUpstream: (def, fn, signal) => this.withUpstream(sessionId, def, fn, signal),
      log: (s, m, n, o) => this.log(s, m, n, o),
      toMcpError: (e: unknown) => this.mcpError(e),
    };
    relayInstructions(server, ctx);
    installRouted(server, ctx);

    server.setRequestHandler('tools/list', async (_req, ctx) => {
      const bridged = await eachServer('tools/list', ctx.mcpReq.signal, async (d, u) =>
        [...(await u.tools(ctx.mcpReq.signal)).values()].map(
          (t) => ({ ...t, name: this.naming.name(d.name, t.name) }) as Tool,
        ),
      );
      if (this.naming.single !== undefined) return { tools: bridged };
      const names = new Set(await this.opts.source.list());
      const spaces = await this.namespaceTools(sessionId, names, ctx.mcpReq.signal);
      // `SERVER__TOOL` names belong to bridged servers and namespaces: a registered tool named with `__` is
      // never offered (whether or not such a server exists now), so a name always means one thing
      const local = this.opts.local
        ? (await this.opts.local.list()).filter((t) => {
            if (!t.name.includes(NAME_SEP)) return true;
            this.log('local', 'tools/list', t.name, 'hidden:name-has-separator');
            return false;
          })
        : [];
      return { tools: [...local, ...bridged, ...spaces] };
    });

    server.setRequestHandler('tools/call', async (req, ctx) => {
      const name = req.params.name;
      const split = this.naming.parseName(name);
      let def: McpDefinition | undefined;
      let known = false;
      if (split !== undefined) {
        try {
          def = await this.opts.source.load(split.server);
          known = def !== undefined;
        } catch {
          known = true; // refused inside callBridged with its stable code
        }
      }
      // a removed server: its sessions in this client session end too
      if (split !== undefined && !known) await this.pool.end(`${sessionId}\0${split.server}`);
      if (this.naming.single !== undefined && !known)
        throw this.mcpError(
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
          const round = await this.inputRound(sessionId, split.server, split.rest, req.params.arguments, ctx.mcpReq);
          const result =
            round?.suspension !== undefined
              ? await this.resumeSuspended(split.server, split.rest, round)
              : await this.callBridged(
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
            return (await this.relayedAnswer(
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
          (await (this.opts.source.loadNamespace?.(split.server) ?? Promise.resolve(undefined)).catch(
            () => undefined,
          )) !== undefined
        ) {
          return await this.callNamespace(sessionId, split.server, split.rest, req.params.arguments, ctx.mcpReq.signal);
        }
        if (this.opts.local && name.includes(NAME_SEP)) {
          this.log('local', 'tools/call', name, 'refused:E_UNKNOWN_TOOL');
          throw new TyError(
            'E_UNKNOWN_TOOL',
            `no tool "${name.slice(0, 80)}": names with "${NAME_SEP}" are SERVER${NAME_SEP}TOOL (no such ` +
              `server or namespace); registered tools named with "${NAME_SEP}" are not offered over MCP, rename ` +
              `the tool`,
          );
        }
        if (this.opts.local) {
          const args = req.params.arguments ?? {};
          try {
            const r = await this.opts.local.call(name, args, ctx.mcpReq.signal);
            this.log('local', 'tools/call', name, r.isError ? 'tool-error' : 'ok');
            return r;
          } catch (e) {
            const t = toTyError(e, 'E_MCP');
            if (TOOL_EXECUTION_CODES.has(t.code)) {
              this.log('local', 'tools/call', name, `tool-error:${t.code}`);
              return toolErrorResult(t.code, clientMessage(t, this.opts.hint));
            }
            this.log('local', 'tools/call', name, `refused:${t.code}`);
            throw e;
          }
        }
        this.log(split?.server ?? 'local', 'tools/call', name, 'refused:E_UNKNOWN_TOOL');
        throw new TyError('E_UNKNOWN_TOOL', `no tool "${name.slice(0, 80)}"`);
      } catch (e) {
        throw this.mcpError(e);
      }
    });

    server.setRequestHandler('prompts/list', async (_req, ctx) => ({
      // every page of every server (bounded in UpstreamSession.allPages), so nothing is dropped
      prompts: await eachServer('prompts/list', ctx.mcpReq.signal, async (d, u) =>
        (await u.allPrompts(ctx.mcpReq.signal)).map(
          (p) => ({ ...p, name: this.naming.name(d.name, String(p.name)) }) as Prompt,
        ),
      ),
    }));

    server.setRequestHandler('prompts/get', async (req, ctx) => {
      const split = this.naming.parseName(req.params.name);
      if (!split)
        throw new RpcFailure(RPC.INVALID_PARAMS, 'prompt names are SERVER__PROMPT', { code: 'E_UNKNOWN_TOOL' });
      let outcome = 'refused';
      try {
        const def = await this.definition(sessionId, split.server);
        // a 2026-07-28 client can take input requests on prompts/get too (bound to the prompt, not a tool)
        const bound = `prompts/get:${split.rest}`;
        const round = await this.inputRound(sessionId, split.server, bound, req.params.arguments, ctx.mcpReq);
        // postToolUse feedback has no place in a prompt result: the hooks run, their output is not sent
        const definition = await this.withUpstream(
          sessionId,
          def,
          (u) => u.promptDefinition(split.rest, ctx.mcpReq.signal),
          ctx.mcpReq.signal,
        ).catch(() => undefined);
        const { value: r } = await this.gated(
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
            return this.withUpstream(
              sessionId,
              def,
              (u): Promise<unknown> =>
                u.era === 'modern' && (round !== undefined || this.opts.elicit !== undefined)
                  ? callTakingInput(
                      this.opts.elicit,
                      split.server,
                      round,
                      ctx.mcpReq.signal,
                      (input) => u.getPromptTakingInput(split.rest, req.params.arguments, input, ctx.mcpReq.signal),
                      (o) => this.log(split.server, 'prompts/get', split.rest, o),
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
          return (await this.relayedAnswer(
            sessionId,
            split.server,
            bound,
            req.params.arguments,
            r,
          )) as unknown as GetPromptResult;
        }
        outcome = 'ok';
        return mapPromptResult(r as GetPromptResult, split.server, this.naming);
      } catch (e) {
        if (outcome === 'refused') outcome = `refused:${toTyError(e, 'E_MCP').code}`;
        throw this.mcpError(e);
      } finally {
        this.log(split.server, 'prompts/get', split.rest, outcome);
      }
    });

    server.setRequestHandler('resources/list', async (_req, ctx) => ({
      resources: await eachServer('resources/list', ctx.mcpReq.signal, async (d, u) =>
        (await u.allResources(ctx.mcpReq.signal)).map(
          (r) => ({ ...r, uri: this.naming.uri(d.name, String(r.uri)) }) as Resource,
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
              name: this.naming.single !== undefined ? t.name : this.naming.name(d.name, String(t.name)),
              uriTemplate: this.naming.uri(d.name, String(t.uriTemplate)),
            }) as ResourceTemplateType,
        ),
      ),
    }));

    server.setRequestHandler('resources/read', async (req, ctx) => {
      const w = this.naming.parseUri(req.params.uri);
      if (!w)
        throw new RpcFailure(RPC.INVALID_PARAMS, 'resource URIs are the tymcp: ones the bridge listed', {
          code: 'E_UNKNOWN_TOOL',
        });
      let outcome = 'refused';
      try {
        const def = await this.definition(sessionId, w.server);
        // postToolUse feedback has no place in a resource result: the hooks run, their output is not sent
        const definition = await this.withUpstream(
          sessionId,
          def,
          (u) => u.resourceDefinition(w.uri, ctx.mcpReq.signal),
          ctx.mcpReq.signal,
        ).catch(() => undefined);
        const { value: r } = await this.gated(
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
            return this.withUpstream(
              sessionId,
              def,
              (u) => u.readResource(w.uri, ctx.mcpReq.signal),
              ctx.mcpReq.signal,
            );
          },
        );
        outcome = 'ok';
        return { ...r, contents: r.contents.map((c) => ({ ...c, uri: this.naming.uri(w.server, c.uri) })) };
      } catch (e) {
        if (outcome === 'refused') outcome = `refused:${toTyError(e, 'E_MCP').code}`;
        throw this.mcpError(e);
      } finally {
        this.log(w.server, 'resources/read', undefined, outcome);
      }
    });

    return server;
  }

  /**
   * The direct path of one client session (see node/mcp/serve.ts): a `tools/call` for a defined server is
   * run by callBridged itself (the definition loaded once, the tool looked up, arguments checked against
   * its schema, the rules or the gate asked, the call forwarded) and answered on `reply`, without the SDK
   * Server's and Client's schema passes; callBridged and UpstreamSession.callTool apply the same checks.
   * Anything else (a namespace, a registered tool, an unknown or undefined server, params the structural
   * check of toolCallParams does not take) returns false and goes to the session's SDK Server.
   */
  directPath(sessionId: string, reply: (message: unknown) => void): DirectPath {
    return {
      request: (message, pinnedModern) => this.directToolCall(sessionId, message, reply, pinnedModern === true),
      cancelled: (params) => {
        const id = (params as { requestId?: unknown } | undefined)?.requestId;
        const ac = typeof id === 'string' || typeof id === 'number' ? this.direct.get(sessionId)?.get(id) : undefined;
        if (ac === undefined) return false;
        ac.abort();
        return true;
      },
    };
  }

  private directToolCall(
    sessionId: string,
    message: Record<string, unknown>,
    reply: (message: unknown) => void,
    pinnedModern: boolean,
  ): boolean {
    const id = message.id;
    if (typeof id !== 'string' && typeof id !== 'number') return false;
    const sdk = this.servers.get(sessionId);
    if (sdk === undefined) return false;
    const p = toolCallParams(message.params);
    const split = p === undefined ? undefined : this.naming.parseName(p.name);
    if (p === undefined || split === undefined) return false;
    // the era of the request is the session's: a 2026-07-28 request on a connection pinned to the version it
    // names, a 2025-era one on a connection that is not 2026-07-28 (the SDK Server refuses the others)
    const negotiated = sdk.getNegotiatedProtocolVersion();
    const modern = p.envelope !== undefined;
    if (modern ? !pinnedModern || negotiated !== p.envelope : negotiated !== undefined && negotiated >= MODERN_REVISION)
      return false;
    let def: McpDefinition | undefined;
    try {
      def = this.opts.source.loadSync?.(split.server);
    } catch {
      return false; // the SDK path refuses it with its stable code
    }
    if (def === undefined) return false;
    let calls = this.direct.get(sessionId);
    if (calls === undefined) this.direct.set(sessionId, (calls = new Map()));
    if (calls.has(id)) return false;
    const ac = new CallAbort();
    calls.set(id, ac);
    const token = p.progressToken;
    // written at once, in arrival order, so all of a call's progress goes out before its result
    const onprogress =
      token === undefined
        ? undefined
        : (pr: { progress: number; total?: number; message?: string }) =>
            void (
              ac.aborted ||
              reply({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, ...pr } })
            );
    // a 2026-07-28 client may take input requests (multi-round-trip); its retries take the SDK path (toolCallParams)
    const round: CallRound | undefined = modern
      ? { clientCapabilities: declaredCapabilities((message.params as { _meta?: unknown })._meta) ?? {} }
      : undefined;
    (
      this.forwardAtOnce(sessionId, def, split.rest, p.arguments, ac, onprogress, round) ??
      this.callBridged(sessionId, split.server, split.rest, p.arguments, ac.signal, onprogress, def, round)
    )
      .then((r) => (isRelayed(r) ? this.relayedAnswer(sessionId, split.server, split.rest, p.arguments, r) : r))
      .then(
        (result) => {
          calls.delete(id);
          // a cancelled request gets no response (MCP cancellation); 2026-07-28 results encoded as the SDK Server does
          if (!ac.aborted)
            reply({
              jsonrpc: '2.0',
              id,
              result: modern
                ? encodeModernToolResult(result as unknown as Record<string, unknown>, BRIDGE_SERVER_INFO)
                : result,
            });
        },
        (e: unknown) => {
          calls.delete(id);
          if (ac.aborted) return;
          // the JSON-RPC error the SDK Server would send for the same throw
          const err = this.mcpError(e) as Error & { code?: unknown; data?: unknown };
          const thrown = typeof err.code === 'number' && Number.isSafeInteger(err.code) ? err.code : RPC.INTERNAL_ERROR;
          // the SDK's 2026-07-28 codec sends -32002 (resource not found) as -32602
          const code = modern && thrown === -32002 ? RPC.INVALID_PARAMS : thrown;
          reply({
            jsonrpc: '2.0',
            id,
            error:
              err.data === undefined ? { code, message: err.message } : { code, message: err.message, data: err.data },
          });
        },
      );
    return true;
  }

  /**
   * callBridged's checks when each can be made at once: no pause tracker, a ready session whose definition
   * fingerprint is `def`'s, the tool in its cached list, arguments that pass the tool's schema, a rule of
   * `def` (loaded for this request) that allows the call; then the call is forwarded and logged as
   * callBridged logs it. Undefined whenever any check cannot pass at once: callBridged then decides, asks
   * or refuses (so every refusal, question and count stays in one place).
   */
  private forwardAtOnce(
    sessionId: string,
    def: McpDefinition,
    tool: string,
    args: unknown,
    signal: CallAbort,
    onprogress: ((p: { progress: number; total?: number; message?: string }) => void) | undefined,
    round: CallRound | undefined,
  ): Promise<CallToolResult | RelayedInput> | undefined {
    // with a gate every call goes through gate.run in callBridged (pause, deny rules, hooks, audit)
    if (this.opts.gate !== undefined || this.opts.pause !== undefined || !McpBridge.allowedByRules(def, 'mcp', tool))
      return undefined;
    const held = this.pool.tryHold(`${sessionId}\0${def.name}`, this.opts.source.fingerprint(def));
    if (held === undefined) return undefined;
    const u = held.session;
    // a 2025-era server's call that may be held open for a 2026-07-28 client's input: callBridged's (suspendable)
    if (
      u.era !== 'modern' &&
      round?.clientCapabilities?.elicitation !== undefined &&
      this.opts.elicit?.inputRule !== undefined
    ) {
      held.release();
      return undefined;
    }
    const t = u.alive ? u.cachedTool(tool) : undefined;
    const checked = t === undefined ? undefined : checkToolArguments(t.inputSchema, args);
    if (checked === undefined || !checked.ok) {
      held.release();
      return undefined;
    }
    const server = def.name;
    // a 2026-07-28 server may answer input_required: taken as callBridged takes it (bridge-input.ts callTakingInput)
    const call: Promise<CallToolResult | RelayedInput> =
      u.era === 'modern' && (round !== undefined || this.opts.elicit !== undefined)
        ? (callTakingInput(
            this.opts.elicit,
            server,
            round,
            signal.signal,
            (input) => u.callTool(tool, checked.args, onprogress ? { signal, onprogress, input } : { signal, input }),
            (o) => this.log(server, 'tools/call', tool, o),
          ) as Promise<CallToolResult | RelayedInput>)
        : u.callTool(tool, checked.args, onprogress ? { signal, onprogress } : { signal });
    return call.then(
      (r) => {
        held.release();
        if (isRelayed(r)) {
          this.log(server, 'tools/call', tool, 'input-required');
          return r;
        }
        this.log(server, 'tools/call', tool, r.isError ? 'tool-error' : 'ok');
        return mapToolResult(r, server, this.naming);
      },
      (e: unknown) => {
        held.release();
        this.log(server, 'tools/call', tool, 'failed');
        throw e;
      },
    );
  }

  /**
   * Log the protocol revision a client session speaks, once per session (`{"server":"client","method":
   * "session","outcome":"protocol:2026-07-28"}`).
   */
  noteClientProtocol(sessionId: string, version: string): void {
    if (this.clientProtocol.has(sessionId)) return;
    this.clientProtocol.add(sessionId);
    this.log('client', 'session', undefined, `protocol:${version}`);
  }
  private readonly clientProtocol = new Set<string>();

  /** The client session ended: its server sessions stop (a start still running is cancelled). */
  async closeSession(sessionId: string): Promise<void> {
    const s = this.servers.get(sessionId);
    this.servers.delete(sessionId);
    this.notifiers.delete(sessionId);
    this.clientProtocol.delete(sessionId);
    for (const ac of this.direct.get(sessionId)?.values() ?? []) ac.abort();
    this.direct.delete(sessionId);
    await this.pool.endPrefix(`${sessionId}\0`);
    await s?.close().catch(() => undefined);
  }

  /** Tell every client session that the tool, prompt and resource lists changed (MCP listChanged). */
  private async listsChanged(): Promise<void> {
    for (const n of this.notifiers.values()) {
      n.toolsChanged();
      n.promptsChanged();
      n.resourcesChanged();
    }
    for (const [id, s] of [...this.servers.entries()]) {
      if (this.notifiers.has(id)) continue;
      await s.sendToolListChanged().catch(() => undefined);
      await s.sendPromptListChanged().catch(() => undefined);
      await s.sendResourceListChanged().catch(() => undefined);
    }
  }

  /** Stop every session and server. */
  async close(): Promise<void> {
    for (const sus of [...this.suspensions.values()]) {
      sus.end();
      sus.controller.abort();
    }
    this.unwatch?.();
    this.unwatch = undefined;
    await Promise.all([...this.servers.keys()].map((k) => this.closeSession(k)));
    await this.pool.closeAll();
  }
}
