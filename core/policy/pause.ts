// Refusal counting and persisted per-tool pauses (E_PAUSED until a person resumes); core, trusted side.
import { TyError } from '../errors.js';
import { KEY_RE, type Store } from '../store/contract.js';

/**
 * Pause threshold: `maxRefusals` refusals within `windowMs` (ms) pause the tool. Default 10 in 60 000 ms.
 * `expireMs`: a pause lifts by itself this long after it began (ms); absent: only a person lifts it.
 */
export interface PauseConfig {
  maxRefusals: number;
  windowMs: number;
  expireMs?: number;
}
export const DEFAULT_PAUSE: PauseConfig = { maxRefusals: 10, windowMs: 60_000 };

/** Stored record `pause/<key>`: recent refusal times (ms since the epoch) and the pause, if any. */
export interface PauseRecord {
  tool: string;
  refusals: number[];
  paused?: { at: number; count: number; windowMs: number };
}

export interface PausedTool {
  tool: string;
  /** ms since the epoch */
  at: number;
  count: number;
  windowMs: number;
  /** When the pause lifts by itself (ms since the epoch), if it does. */
  until?: number;
}

const NS = 'pause';
const enc = new TextEncoder();

/** FNV-1a, 32-bit, over UTF-8 bytes (not cryptographic: only keeps long names apart in store keys). */
function fnv1a(bytes: Uint8Array, seed: number): string {
  let h = seed >>> 0;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/**
 * A store key for any name (tool names, MCP `server__tool` names, non-CID revision labels): the name
 * itself when it is a valid key (store.ts KEY_RE) not starting with "x-" or "h-"; else `x-` + hex of its
 * UTF-8 bytes; else, for long names, `h-` + a prefix of that hex + two 32-bit FNV-1a hashes.
 */
export function storeKeyFor(name: string): string {
  if (KEY_RE.test(name) && !name.startsWith('.') && !name.startsWith('x-') && !name.startsWith('h-')) return name;
  const bytes = enc.encode(name);
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  if (hex.length <= 190) return `x-${hex}`;
  return `h-${hex.slice(0, 160)}-${fnv1a(bytes, 0x811c9dc5)}${fnv1a(bytes, 0x01234567)}-${bytes.length}`;
}

/** The pause record key of a tool name (see {@link storeKeyFor}). */
export const pauseKey = storeKeyFor;

/**
 * Counts refusals per tool name and pauses a tool that collects `maxRefusals` of them within `windowMs`.
 * State lives in the store (namespace `pause`), so it holds across processes and restarts; updates run
 * under the store's lock. A pause lasts until {@link resume}.
 */
export class PauseTracker {
  readonly config: PauseConfig;
  constructor(
    readonly store: Store,
    config: Partial<PauseConfig> = {},
    readonly clock: () => number = () => Date.now(),
  ) {
    this.config = { ...DEFAULT_PAUSE, ...config };
    if (!Number.isInteger(this.config.maxRefusals) || this.config.maxRefusals < 1)
      throw new TyError('E_INVALID_SETTINGS', 'pause.maxRefusals must be a positive integer');
    if (!Number.isInteger(this.config.windowMs) || this.config.windowMs < 1)
      throw new TyError('E_INVALID_SETTINGS', 'pause.windowMs must be a positive integer (ms)');
    if (this.config.expireMs !== undefined && (!Number.isInteger(this.config.expireMs) || this.config.expireMs < 1))
      throw new TyError('E_INVALID_SETTINGS', 'pause.expireMs must be a positive integer (ms)');
  }

  /** The pause on `tool`, or undefined when its calls may proceed. */
  async paused(tool: string): Promise<PausedTool | undefined> {
    // read on every call: kept in memory while the record's stamp holds (a pause set by any process is seen at once)
    const r = await this.store.getJsonFresh<PauseRecord>(NS, pauseKey(tool));
    return r?.paused && this.#inForce(r.paused) ? this.#view(tool, r.paused) : undefined;
  }

  /** An expired pause no longer holds (expireMs). */
  #inForce(p: NonNullable<PauseRecord['paused']>): boolean {
    return this.config.expireMs === undefined || this.clock() < p.at + this.config.expireMs;
  }
  #view(tool: string, p: NonNullable<PauseRecord['paused']>): PausedTool {
    return { tool, ...p, ...(this.config.expireMs !== undefined ? { until: p.at + this.config.expireMs } : {}) };
  }

  /** @throws TyError E_PAUSED when `tool` is paused; the message says how to resume. */
  async check(tool: string): Promise<void> {
    const p = await this.paused(tool);
    if (p) {
      throw new TyError(
        'E_PAUSED',
        `calls to "${tool}" are paused after ${p.count} refusals within ${Math.round(p.windowMs / 1000)} ` +
          `s, until a person resumes them${p.until !== undefined ? `; the pause lifts by itself at ${new Date(p.until).toISOString()}` : ''}`,
        { paused: tool },
      );
    }
  }

  /** Count one refusal; returns true when this refusal paused the tool. */
  async recordRefusal(tool: string): Promise<boolean> {
    const now = this.clock();
    let pausedNow = false;
    await this.store.update<PauseRecord>(NS, pauseKey(tool), (old) => {
      const rec: PauseRecord = old ?? { tool, refusals: [] };
      if (rec.paused && this.#inForce(rec.paused)) return rec;
      const refusals = (Array.isArray(rec.refusals) ? rec.refusals : []).filter(
        (t) => typeof t === 'number' && t > now - this.config.windowMs && t <= now,
      );
      refusals.push(now);
      const next: PauseRecord = { tool, refusals: refusals.slice(-this.config.maxRefusals) };
      if (refusals.length >= this.config.maxRefusals) {
        next.paused = { at: now, count: refusals.length, windowMs: this.config.windowMs };
        pausedNow = true;
      }
      return next;
    });
    return pausedNow;
  }

  /** Lift a pause and forget counted refusals. Returns true when the tool was paused. */
  async resume(tool: string): Promise<boolean> {
    let was = false;
    await this.store.update<PauseRecord>(NS, pauseKey(tool), (old) => {
      was = old?.paused !== undefined;
      return undefined;
    });
    return was;
  }

  /** Every paused tool, by name. */
  async list(): Promise<PausedTool[]> {
    const out: PausedTool[] = [];
    for (const key of await this.store.backend.list(NS)) {
      const r = await this.store.getJson<PauseRecord>(NS, key);
      if (r?.paused && typeof r.tool === 'string' && this.#inForce(r.paused)) out.push(this.#view(r.tool, r.paused));
    }
    return out.sort((a, b) => a.tool.localeCompare(b.tool));
  }
}
