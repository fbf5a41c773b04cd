// The one place the app mounts servers for pages that embed it (the registration protocol over postMessage); browser
// app, trusted side.
import type { BrowserHost } from '../host.js';

/** What an embedding server gets: the host, and the origins the person allowed (settings, empty by default). */
export interface EmbeddingContext {
  host: BrowserHost;
  /** Current "Allowed embedding origins" setting (read on every message: the person may change it). */
  allowedOrigins(): string[];
  /** Ask the person whether a page that is not allowed yet may use the app (on its first handshake). */
  askToAllow?: (origin: string) => Promise<boolean>;
}

/** A server for embedding pages; returns its stop function. */
export type EmbeddingServer = (ctx: EmbeddingContext) => () => void;

const servers: EmbeddingServer[] = [];

/** Register a server to start when the app mounts (called by the protocol module at import time). */
export function registerEmbeddingServer(s: EmbeddingServer): void {
  servers.push(s);
}

/**
 * Start every registered server. With no allowed origin, a server must answer no page (the list is checked per
 * message). Returns a function that stops them all.
 */
export function mountEmbedding(ctx: EmbeddingContext): () => void {
  const stops = servers.map((s) => s(ctx));
  return () => {
    for (const stop of stops) stop();
  };
}
