// How bridged names and resource URIs appear to a client (SERVER__NAME and tymcp://SERVER/URI, or a single server's
// own), and rewriting them inside results; core, trusted side.

/** Separator between server and tool names in offered names: `SERVER__TOOL`. */
export const NAME_SEP = '__';
/**
 * Scheme of bridged resource URIs: `tymcp://SERVER/UPSTREAM-URI` (the upstream URI as is, so templates expand in
 * place).
 */
export const RES_PREFIX = 'tymcp://';
/** The first form (`tymcp:SERVER/ENCODED-URI`), still read back. */
const OLD_SCHEME = 'tymcp:';

/**
 * The names and URIs one bridge shows a client. `prefixed` (the command line's `mcp serve`): tools and prompts as
 * `SERVER__NAME`, resource URIs and templates as `tymcp://SERVER/URI`. `single(SERVER)` (`mcp proxy`): one
 * server under its own names and URIs, nothing rewritten.
 */
export interface Naming {
  /** The single server of a proxy, undefined when several are offered. */
  readonly single: string | undefined;
  name(server: string, name: string): string;
  /** The server and its own name behind an offered name, undefined when it names none. */
  parseName(offered: string): { server: string; rest: string } | undefined;
  uri(server: string, uri: string): string;
  /** The server and its own URI behind an offered URI (or template), undefined when it names none. */
  parseUri(offered: string): { server: string; uri: string } | undefined;
}

export const prefixedNaming: Naming = {
  single: undefined,
  name: (server, name) => `${server}${NAME_SEP}${name}`,
  parseName(offered) {
    const i = offered.indexOf(NAME_SEP);
    if (i <= 0) return undefined;
    return { server: offered.slice(0, i), rest: offered.slice(i + NAME_SEP.length) };
  },
  uri: (server, uri) => `${RES_PREFIX}${server}/${uri}`,
  parseUri(offered) {
    if (offered.startsWith(RES_PREFIX)) {
      const rest = offered.slice(RES_PREFIX.length);
      const i = rest.indexOf('/');
      if (i <= 0) return undefined;
      return { server: rest.slice(0, i), uri: rest.slice(i + 1) };
    }
    if (!offered.startsWith(OLD_SCHEME)) return undefined;
    const rest = offered.slice(OLD_SCHEME.length);
    const i = rest.indexOf('/');
    if (i <= 0) return undefined;
    try {
      return { server: rest.slice(0, i), uri: decodeURIComponent(rest.slice(i + 1)) };
    } catch {
      return undefined;
    }
  },
};

export function singleNaming(server: string): Naming {
  return {
    single: server,
    name: (_s, name) => name,
    parseName: (offered) => ({ server, rest: offered }),
    uri: (_s, uri) => uri,
    parseUri: (offered) => ({ server, uri: offered }),
  };
}

type Json = Record<string, unknown>;

/** One content block with its resource URIs mapped (resource_link.uri, embedded resource.resource.uri). */
function mapBlock(block: unknown, map: (uri: string) => string): unknown {
  if (typeof block !== 'object' || block === null) return block;
  const b = block as Json;
  if (b.type === 'resource_link' && typeof b.uri === 'string') return { ...b, uri: map(b.uri) };
  if (b.type === 'resource' && typeof b.resource === 'object' && b.resource !== null) {
    const r = b.resource as Json;
    if (typeof r.uri === 'string') return { ...b, resource: { ...r, uri: map(r.uri) } };
  }
  return block;
}

/**
 * A tools/call result with every resource URI a client can see mapped by `naming` (resource links and
 * embedded resources in `content`), so each one reads back through the bridge and reaches its server.
 */
export function mapToolResult<T extends { content?: unknown }>(result: T, server: string, naming: Naming): T {
  if (naming.single !== undefined || !Array.isArray(result.content)) return result;
  return { ...result, content: result.content.map((c) => mapBlock(c, (u) => naming.uri(server, u))) };
}

/** A prompts/get result with the URIs in its messages' content mapped (see mapToolResult). */
export function mapPromptResult<T extends { messages?: unknown }>(result: T, server: string, naming: Naming): T {
  if (naming.single !== undefined || !Array.isArray(result.messages)) return result;
  return {
    ...result,
    messages: result.messages.map((m) => {
      if (typeof m !== 'object' || m === null) return m;
      const msg = m as Json;
      const content = Array.isArray(msg.content)
        ? msg.content.map((c) => mapBlock(c, (u) => naming.uri(server, u)))
        : mapBlock(msg.content, (u) => naming.uri(server, u));
      return { ...msg, content };
    }),
  };
}
