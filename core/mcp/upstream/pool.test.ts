// Unit tests for the bridged-session pool limits; core, trusted side.
import { describe, expect, it } from 'vitest';
import { SessionPool } from './pool.js';

class Fake {
  closed = false;
  async close(): Promise<void> {
    this.closed = true;
  }
}
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('SessionPool', () => {
  it('reuses a session per key and refuses a 9th place with E_BUSY after the wait', async () => {
    const pool = new SessionPool<Fake>({ waitMs: 50 });
    const made: Fake[] = [];
    const start = async (): Promise<Fake> => {
      const f = new Fake();
      made.push(f);
      return f;
    };
    for (let i = 0; i < 8; i++) await pool.use(`s${i}`, 'fp', start, async () => 1);
    await pool.use('s0', 'fp', start, async () => 1);
    expect(made.length).toBe(8);
    await expect(pool.use('s8', 'fp', start, async () => 1)).rejects.toMatchObject({ code: 'E_BUSY' });
    expect(pool.size).toBe(8);
    await pool.closeAll();
    expect(made.every((f) => f.closed)).toBe(true);
  });

  it('starts at most 2 at once; a 3rd waits its turn, and gets E_BUSY when the wait runs out', async () => {
    const pool = new SessionPool<Fake>({ waitMs: 80 });
    const gates = [deferred<void>(), deferred<void>()];
    let startsSeen = 0;
    const slow = async (): Promise<Fake> => {
      const g = gates[startsSeen++];
      await g?.promise;
      return new Fake();
    };
    const a = pool.use('a', 'fp', slow, async () => 'a');
    const b = pool.use('b', 'fp', slow, async () => 'b');
    const c = pool.use(
      'c',
      'fp',
      async () => new Fake(),
      async () => 'c',
    );
    await expect(c).rejects.toMatchObject({ code: 'E_BUSY' });
    expect(startsSeen).toBe(2);
    gates[0]?.resolve();
    gates[1]?.resolve();
    expect(await a).toBe('a');
    expect(await b).toBe('b');
    // now a third may start
    expect(
      await pool.use(
        'c',
        'fp',
        async () => new Fake(),
        async () => 'c',
      ),
    ).toBe('c');
    await pool.closeAll();
  });

  it('a waiting 3rd start proceeds once a slot frees', async () => {
    const pool = new SessionPool<Fake>({ waitMs: 5_000 });
    const g = deferred<void>();
    const a = pool.use(
      'a',
      'fp',
      async () => (await g.promise, new Fake()),
      async () => 'a',
    );
    const b = pool.use(
      'b',
      'fp',
      async () => (await g.promise, new Fake()),
      async () => 'b',
    );
    const c = pool.use(
      'c',
      'fp',
      async () => new Fake(),
      async () => 'c',
    );
    g.resolve();
    expect(await Promise.all([a, b, c])).toEqual(['a', 'b', 'c']);
    await pool.closeAll();
  });

  it('ends an idle session with its server', async () => {
    const pool = new SessionPool<Fake>({ idleMs: 30 });
    const f = new Fake();
    await pool.use(
      'a',
      'fp',
      async () => f,
      async () => 1,
    );
    await new Promise((r) => setTimeout(r, 80));
    expect(f.closed).toBe(true);
    expect(pool.size).toBe(0);
  });

  it('does not idle out a session while a call runs', async () => {
    const pool = new SessionPool<Fake>({ idleMs: 20 });
    const f = new Fake();
    await pool.use(
      'a',
      'fp',
      async () => f,
      async () => new Promise((r) => setTimeout(r, 80)),
    );
    expect(f.closed).toBe(false);
    await pool.closeAll();
  });

  it('a client that closes before its session started gets none and holds no place', async () => {
    const pool = new SessionPool<Fake>({});
    const g = deferred<void>();
    const f = new Fake();
    const ctl = new AbortController();
    const p = pool.use(
      'a',
      'fp',
      async () => (await g.promise, f),
      async () => 1,
      ctl.signal,
    );
    expect(pool.size).toBe(1);
    ctl.abort();
    await pool.cancel('a');
    await expect(p).rejects.toMatchObject({ code: 'E_ABORTED' });
    expect(pool.size).toBe(0);
    g.resolve();
    await new Promise((r) => setTimeout(r, 10));
    expect(f.closed).toBe(true);
  });

  it('a slow start whose caller gave up is kept for the next call', async () => {
    const pool = new SessionPool<Fake>({});
    const g = deferred<void>();
    let starts = 0;
    const start = async (): Promise<Fake> => (starts++, await g.promise, new Fake());
    const ctl = new AbortController();
    const p = pool.use('a', 'fp', start, async () => 1, ctl.signal);
    ctl.abort();
    await expect(p).rejects.toMatchObject({ code: 'E_ABORTED' });
    g.resolve();
    expect(await pool.use('a', 'fp', start, async () => 2)).toBe(2);
    expect(starts).toBe(1);
    await pool.closeAll();
  });

  it('a changed definition ends the older session: its next request is told it is gone', async () => {
    const pool = new SessionPool<Fake>({});
    const old = new Fake();
    await pool.use(
      'a',
      'v1',
      async () => old,
      async () => 1,
    );
    await expect(
      pool.use(
        'a',
        'v2',
        async () => new Fake(),
        async () => 1,
      ),
    ).rejects.toMatchObject({ code: 'E_MCP_REDEFINED', message: expect.stringContaining('gone') });
    expect(old.closed).toBe(true);
    expect(
      await pool.use(
        'a',
        'v2',
        async () => new Fake(),
        async () => 3,
      ),
    ).toBe(3);
    await pool.closeAll();
  });

  it('tryHold gives only a ready session of the same fingerprint, and holds it against the idle end until released', async () => {
    const pool = new SessionPool<Fake>({ idleMs: 30 });
    const g = deferred<void>();
    const f = new Fake();
    const starting = pool.use(
      'a',
      'v1',
      async () => (await g.promise, f),
      async () => 1,
    );
    expect(pool.tryHold('a', 'v1')).toBeUndefined(); // still starting
    g.resolve();
    await starting;
    expect(pool.tryHold('a', 'v2')).toBeUndefined(); // defined again: use() decides, the session is not handed out
    expect(pool.tryHold('b', 'v1')).toBeUndefined();
    const held = pool.tryHold('a', 'v1');
    expect(held?.session).toBe(f);
    await new Promise((r) => setTimeout(r, 80));
    expect(f.closed).toBe(false);
    held!.release();
    held!.release(); // a second release counts once
    await new Promise((r) => setTimeout(r, 80));
    expect(f.closed).toBe(true);
    expect(pool.size).toBe(0);
    await pool.closeAll();
    expect(pool.tryHold('a', 'v1')).toBeUndefined();
  });

  it('a session used again before the idle time is up stays; it ends idleMs after its last call', async () => {
    // gaps well inside the idle time, adding up to more than it
    const pool = new SessionPool<Fake>({ idleMs: 250 });
    const f = new Fake();
    await pool.use(
      'a',
      'fp',
      async () => f,
      async () => 1,
    );
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 100));
      await pool.use(
        'a',
        'fp',
        async () => new Fake(),
        async () => 1,
      );
    }
    expect(f.closed).toBe(false);
    await new Promise((r) => setTimeout(r, 600));
    expect(f.closed).toBe(true);
  });

  it('a session that ended on its own is replaced by the next call at once, while its own close still runs', async () => {
    const pool = new SessionPool<Ending>();
    const first = new Ending();
    const made: Ending[] = [];
    const start = async (): Promise<Ending> => {
      const f = made.length === 0 ? first : new Ending();
      made.push(f);
      return f;
    };
    expect(await pool.use('a', 'fp', start, async (s) => s)).toBe(first);
    // its server timed out: the session says it is no longer alive; its close (a process group's kill) is slow
    first.alive = false;
    expect(pool.tryHold('a', 'fp')).toBeUndefined();
    const second = await pool.use('a', 'fp', start, async (s) => s);
    expect(second).not.toBe(first);
    expect(first.closeCalls).toBe(1);
    expect(pool.size).toBe(1);
    for (const f of made) f.finishClose();
    await pool.closeAll();
  });

  it("an ended session's late word (retire) frees only its own place, never the session that replaced it", async () => {
    const pool = new SessionPool<Ending>();
    const first = new Ending();
    await pool.use(
      'a',
      'fp',
      async () => first,
      async () => 1,
    );
    first.alive = false;
    const second = new Ending();
    await pool.use(
      'a',
      'fp',
      async () => second,
      async () => 1,
    );
    pool.retire('a', first);
    expect(second.closeCalls).toBe(0);
    expect(pool.tryHold('a', 'fp')?.session).toBe(second);
    // the session that holds the place frees it when it ends
    pool.retire('a', second);
    expect(pool.size).toBe(0);
    expect(second.closeCalls).toBe(1);
    first.finishClose();
    second.finishClose();
  });
});

/** A session whose `alive` the test sets, and whose close takes as long as the test says. */
class Ending {
  alive = true;
  closeCalls = 0;
  private done!: () => void;
  private readonly closed = new Promise<void>((r) => (this.done = r));
  close(): Promise<void> {
    this.closeCalls++;
    return this.closed;
  }
  finishClose(): void {
    this.done();
  }
}
