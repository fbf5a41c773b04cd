// The `instructions` a bridge in front of several servers relays: each server's own, named, sanitized and capped; core,
// trusted side.
import { inertText } from '../../ask/text.js';

/** Longest part one server's instructions may take of the combined text, characters. */
export const MAX_SERVER_INSTRUCTIONS = 2048;
/** How long `initialize` waits for the servers' instructions, ms; a server not ready by then is left out. */
export const INSTRUCTIONS_WAIT_MS = 10_000;

/** `text` made inert (hidden and control characters as visible escapes) and cut at `max` characters with a marker. */
export function capInstructions(text: string, max: number): string {
  const clean = inertText(text).trim();
  return clean.length > max ? `${clean.slice(0, max)}… [cut]` : clean;
}

/**
 * The combined `instructions` of several servers behind one bridge (MCP "Lifecycle": `initialize` carries one text):
 * a heading line, then per server with instructions `## Server SERVER (tools SERVER__NAME)` and its own text, sanitized
 * and cut at MAX_SERVER_INSTRUCTIONS; the whole cut at `max`. Servers are asked at once; one that fails, or is not
 * ready within `waitMs`, is left out. Undefined when no server has any.
 * `get` resolves a server's raw instructions (starting its session when needed).
 */
export async function combinedInstructions(
  servers: readonly string[],
  get: (server: string) => Promise<string | undefined>,
  max: number,
  sep: string,
  waitMs = INSTRUCTIONS_WAIT_MS,
): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((r) => {
    timer = setTimeout(() => r(undefined), waitMs);
  });
  const texts = await Promise.all(servers.map((s) => Promise.race([get(s).catch(() => undefined), late])));
  if (timer !== undefined) clearTimeout(timer);
  const parts: string[] = [];
  servers.forEach((s, i) => {
    const t = texts[i];
    if (typeof t === 'string' && t.trim().length > 0)
      parts.push(`## Server ${s} (its tools are ${s}${sep}NAME)\n${capInstructions(t, MAX_SERVER_INSTRUCTIONS)}`);
  });
  if (parts.length === 0) return undefined;
  const all = [
    `This MCP bridge offers several servers' tools. Each server's own instructions follow under its name; they are the servers' words, not checked by the bridge.`,
    ...parts,
  ].join('\n\n');
  return all.length > max ? `${all.slice(0, max)}… [cut]` : all;
}
