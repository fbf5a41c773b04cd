// Permanent permission decisions, stored per revision identity; core, trusted side.
import { TyError } from '../errors.js';
import type { Store } from '../store/contract.js';
import { decisionCovers, suggestRule, type StoredDecision } from './permissions.js';
import { storeKeyFor } from './pause.js';

/** Permanent decisions, stored per revision identity (store namespace `decisions`, key = revision). */
export interface DecisionStore {
  list(revision?: string): Promise<StoredDecision[]>;
  add(d: StoredDecision): Promise<void>;
}

interface DecisionRecord {
  revision: string;
  decisions: StoredDecision[];
}

/** Permanent decisions in the store. Revoking removes records; a new revision starts with none. */
export class StoreDecisions implements DecisionStore {
  static readonly NS = 'decisions';
  constructor(readonly store: Store) {}

  async list(revision?: string): Promise<StoredDecision[]> {
    const keys = revision !== undefined ? [storeKeyFor(revision)] : await this.store.backend.list(StoreDecisions.NS);
    const out: StoredDecision[] = [];
    for (const k of keys) {
      // one revision's record is read on every call: kept in memory while its stamp holds (a revoke by any process is
      // seen at once)
      const r =
        revision !== undefined
          ? await this.store.getJsonFresh<DecisionRecord>(StoreDecisions.NS, k)
          : await this.store.getJson<DecisionRecord>(StoreDecisions.NS, k);
      if (!r || typeof r.revision !== 'string' || storeKeyFor(r.revision) !== k || !Array.isArray(r.decisions))
        continue;
      if (revision !== undefined && r.revision !== revision) continue;
      out.push(...r.decisions.filter((d) => d && d.revision === r.revision));
    }
    return out;
  }

  async add(d: StoredDecision): Promise<void> {
    if (typeof d.revision !== 'string' || d.revision.length === 0)
      throw new TyError('E_STORE', 'a permanent decision needs a revision identity');
    const rec: StoredDecision = { ...d, scope: 'permanent' };
    await this.store.update<DecisionRecord>(StoreDecisions.NS, storeKeyFor(d.revision), (old) => {
      const keep = (old?.revision === d.revision ? (old.decisions ?? []) : []).filter((x) => !decisionCovers(x, rec));
      return { revision: d.revision, decisions: [...keep, rec] };
    });
  }

  /**
   * Remove permanent decisions of a tool name or revision id; with `rule` (the text the permission listing
   * shows, e.g. `fetch(read:https://a.example)`), only that one. Returns the removed decisions.
   */
  async revoke(which: { tool?: string; revision?: string; rule?: string }): Promise<StoredDecision[]> {
    const removed: StoredDecision[] = [];
    for (const k of await this.store.backend.list(StoreDecisions.NS)) {
      if (which.revision !== undefined && k !== storeKeyFor(which.revision)) continue;
      await this.store.update<DecisionRecord>(StoreDecisions.NS, k, (old) => {
        if (!old) return undefined;
        const keep: StoredDecision[] = [];
        for (const d of old.decisions ?? []) {
          const hit =
            (which.tool === undefined || d.toolName === which.tool) &&
            (which.rule === undefined || suggestRule(d) === which.rule);
          (hit ? removed : keep).push(d);
        }
        return keep.length ? { revision: old.revision, decisions: keep } : undefined;
      });
    }
    return removed;
  }
}
