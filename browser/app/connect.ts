// The origins the page may connect to (its CSP connect-src, kept by `tycli app` at /app/connect): what the app needs,
// what the page has, widening it and reloading; browser app, trusted side.

import { judgeFetchOrigin } from '../../core/capabilities/fetch/mediated.js';
import type { ToolManifest } from '../../protocol/manifest.js';

/** The app server's connect-origin configuration (node/http/app-server.ts CONNECT_PATH). */
const CONNECT_PATH = '/app/connect';

/**
 * `url` as a connect-src source: an http(s) URL's origin, or an https wildcard fetch pattern `https://*.domain` as is.
 * Undefined for anything else.
 */
export function connectSource(url: string): string | undefined {
  const wild = url.startsWith('https://*.');
  try {
    const u = new URL(wild ? url.replace('https://*.', 'https://wildcard-label.') : url);
    if (u.protocol !== 'https:' && (wild || u.protocol !== 'http:')) return undefined;
    return wild ? u.origin.replace('https://wildcard-label.', 'https://*.') : u.origin;
  } catch {
    return undefined;
  }
}

/**
 * The origins a turn needs: the model endpoint's, and the fetch origins of the tools on offer (an origin the mediated
 * fetch always refuses is never reached, so the page need not connect to it either).
 */
export function neededOrigins(endpoint: string, offered: ToolManifest[]): string[] {
  const out: string[] = [];
  const e = connectSource(endpoint);
  if (e) out.push(e);
  for (const m of offered)
    for (const f of m.capabilities?.fetch ?? []) {
      const s = judgeFetchOrigin(f.origin).ok ? connectSource(f.origin) : undefined;
      if (s) out.push(s);
    }
  return out;
}

/**
 * The page's connect origins as the app server keeps them. `managed` is false where the app is not served by
 * `tycli app` (no /app/connect: the server's own policy decides, and nothing is widened here).
 */
export class ConnectOrigins {
  /** What the server lists now (the page's own policy has what it listed when the page loaded: `#page`). */
  #server: Set<string>;
  readonly #page: ReadonlySet<string>;

  private constructor(
    readonly managed: boolean,
    allowed: Set<string>,
  ) {
    this.#page = new Set(allowed);
    this.#server = new Set(allowed);
  }

  /** Read the list the page was served with. */
  static async load(): Promise<ConnectOrigins> {
    try {
      const r = await fetch(CONNECT_PATH, { cache: 'no-store', credentials: 'same-origin' });
      if (!r.ok) return new ConnectOrigins(false, new Set());
      const j = (await r.json()) as { origins?: unknown };
      const list = Array.isArray(j.origins) ? j.origins.filter((o): o is string => typeof o === 'string') : [];
      return new ConnectOrigins(true, new Set(list));
    } catch {
      return new ConnectOrigins(false, new Set());
    }
  }

  /** True when the page can reach `origin` (its own origin always). */
  allows(origin: string): boolean {
    return !this.managed || origin === location.origin || this.#page.has(origin);
  }

  /**
   * May the page reload to reach the missing ones of `needed`? Not when it reloaded for the same origins in the last
   * 30 s and still cannot reach them: another reload would not help (no reload loop).
   */
  reloadFor(needed: Iterable<string>): boolean {
    const key = 'tysandbox-widened';
    const missing = this.missing(needed).sort();
    const last = JSON.parse(sessionStorage.getItem(key) ?? '{}') as { origins?: string[]; at?: number };
    const recent = typeof last.at === 'number' && Date.now() - last.at < 30_000;
    if (recent && missing.every((o) => last.origins?.includes(o))) return false;
    sessionStorage.setItem(key, JSON.stringify({ origins: missing, at: Date.now() }));
    return true;
  }

  /** The sources of `needed` the page cannot reach yet. */
  missing(needed: Iterable<string>): string[] {
    return [...new Set(needed)].filter((o) => !this.allows(o));
  }

  /**
   * Add `needed` to the server's list (`PUT /app/connect`, only taken from this page's own origin). Returns true
   * when the page must reload to reach them (its policy widens on its next load).
   * @throws Error when the server refuses (the message says why).
   */
  async widen(needed: Iterable<string>): Promise<boolean> {
    const add = this.missing(needed);
    if (add.length === 0) return false;
    const next = [...new Set([...this.#server, ...add])];
    if (next.length === this.#server.size) return true;
    const r = await fetch(CONNECT_PATH, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ origins: next }),
      credentials: 'same-origin',
      cache: 'no-store',
    });
    if (!r.ok) throw new Error(`the app server did not take the connect origins: ${(await r.text()).slice(0, 200)}`);
    this.#server = new Set(next);
    return true;
  }
}
