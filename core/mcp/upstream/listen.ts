// A bridge-side session's subscriptions/listen stream to a 2026-07-28 server, for the list changes it declares; core,
// trusted side.
import type { Client } from '@modelcontextprotocol/client';

/**
 * Open a `subscriptions/listen` stream (MCP 2026-07-28 "Subscriptions"; the 2.x SDK Client's `listen`) for the list
 * changes the server declares (tools, prompts, resources `listChanged`). Its notifications reach the session's
 * notification handler, as a 2025-era server's do: caches dropped, relayed to clients, a changed definition hashed
 * anew at the next call. A server that refuses it is listed again only on the next list request.
 * @returns the subscription (undefined when nothing is declared or the server refused); closed at once if `ended()`.
 */
export function listenForChanges(
  client: Client,
  ended: () => boolean,
): Promise<{ close(): Promise<void> } | undefined> | undefined {
  const caps = client.getServerCapabilities() ?? {};
  const filter: { toolsListChanged?: true; promptsListChanged?: true; resourcesListChanged?: true } = {};
  if (caps.tools?.listChanged === true) filter.toolsListChanged = true;
  if (caps.prompts?.listChanged === true) filter.promptsListChanged = true;
  if (caps.resources?.listChanged === true) filter.resourcesListChanged = true;
  if (Object.keys(filter).length === 0) return undefined;
  return client.listen(filter).then(
    (sub) => {
      if (ended()) void sub.close().catch(() => undefined);
      return sub;
    },
    () => undefined,
  );
}
