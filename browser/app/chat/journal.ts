// A running turn's state written as it goes (streamed text, ended calls) to the app database, so a reload loses
// nothing; browser app, trusted side.
import type { AppDb, TurnRecord } from '../app-db.js';
import type { CallOutcome } from './convert.js';

/** Longest wait (ms) before streamed text is written; call outcomes are written at once. */
export const TEXT_WRITE_MS = 250;

/**
 * The journal of one conversation's running turn (app-db `turns`, one record per conversation). `begin(leaf)` starts a
 * model request answering `leaf`; `text(all)` records the text streamed so far (written at most every TEXT_WRITE_MS);
 * `call(id, outcome)` records an ended call at once; `clear()` removes the record once the tree holds everything.
 * Writes are chained, so the record on disk only moves forward.
 */
export class TurnJournal {
  #rec: TurnRecord;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: AppDb,
    conversation: string,
    leaf: string,
  ) {
    this.#rec = { id: conversation, leaf, text: '', calls: {}, updated: Date.now() };
  }

  #write(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const snapshot = { ...this.#rec, updated: Date.now() };
    this.#chain = this.#chain.then(() => this.db.putTurn(snapshot)).catch(() => {});
    return this.#chain;
  }

  /** A model request answering `leaf` starts (the text so far is forgotten: the tree holds it). */
  begin(leaf: string): Promise<void> {
    this.#rec = { ...this.#rec, leaf, text: '', calls: {} };
    return this.#write();
  }

  text(all: string): void {
    this.#rec.text = all;
    this.#timer ??= setTimeout(() => void this.#write(), TEXT_WRITE_MS);
  }

  call(id: string, o: CallOutcome): Promise<void> {
    this.#rec.calls[id] = o;
    return this.#write();
  }

  /** Write what is pending now (before the page goes away). */
  flush(): Promise<void> {
    return this.#write();
  }

  async clear(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#chain;
    this.#chain = this.db.deleteTurn(this.#rec.id).catch(() => {});
    await this.#chain;
  }
}
