// The StoreBackend contract every host's store must meet, framework-free so it runs under vitest and in Chromium; test
// code, trusted side.
import type { StoreBackend } from './contract.js';
import { Store } from './contract.js';
import { ToolRegistry } from '../revisions/registry.js';

/**
 * One named requirement of the store contract. `run` throws (with a reason) when the backend fails it. `peer`, when
 * given, is a second backend over the same storage, as another process or another machine's instance opens it (a
 * second FileStoreBackend over the same folder, a second PostgreSQL connection pool); cases about several instances
 * use it, and run against `backend` twice where there is none.
 */
export interface StoreContractCase {
  name: string;
  run(backend: StoreBackend, peer?: StoreBackend): Promise<void>;
}

function fail(msg: string): never {
  throw new Error(msg);
}
function eq(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}
async function rejectsWith(p: () => Promise<unknown>, code: string, what: string): Promise<void> {
  let err: unknown;
  try {
    await p();
  } catch (e) {
    err = e;
  }
  if (err === undefined) fail(`${what}: expected a rejection with ${code}, it resolved`);
  const c = (err as { code?: unknown }).code;
  if (c !== code) fail(`${what}: expected code ${code}, got ${String(c)} (${String((err as Error).message)})`);
}
const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s);
const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

export const STORE_CONTRACT: StoreContractCase[] = [
  {
    name: 'get of an absent key is undefined; put then get returns the same bytes',
    async run(b) {
      eq(await b.get('bindings', 'nothing-here'), undefined, 'absent');
      await b.put('bindings', 'k1', bytes('hello'));
      eq(text(await b.get('bindings', 'k1')), 'hello', 'round trip');
      await b.put('bindings', 'k1', bytes('second'));
      eq(text(await b.get('bindings', 'k1')), 'second', 'overwrite');
    },
  },
  {
    name: 'stored bytes are copies: mutating the input or the output changes nothing stored',
    async run(b) {
      const input = bytes('abc');
      await b.put('tasks', 'copy', input);
      input[0] = 0x7a;
      const out = await b.get('tasks', 'copy');
      eq(text(out), 'abc', 'after mutating input');
      if (out) out[1] = 0x7a;
      eq(text(await b.get('tasks', 'copy')), 'abc', 'after mutating output');
    },
  },
  {
    name: 'delete removes; deleting an absent key is not an error',
    async run(b) {
      await b.put('storage', 'gone', bytes('x'));
      await b.delete('storage', 'gone');
      eq(await b.get('storage', 'gone'), undefined, 'after delete');
      await b.delete('storage', 'never-was');
    },
  },
  {
    name: 'list returns exactly the keys of one namespace, sorted',
    async run(b) {
      for (const k of ['b', 'a', 'c@1', 'A']) await b.put('listns', k, bytes(k));
      await b.put('listns2', 'zz', bytes('z'));
      await b.put('listn', 'yy', bytes('y'));
      eq(await b.list('listns'), ['A', 'a', 'b', 'c@1'], 'keys');
      eq(await b.list('empty-ns'), [], 'empty namespace');
    },
  },
  {
    name: 'namespaces and keys outside [A-Za-z0-9._@:-]{1,200} are refused with E_STORE (no path tricks)',
    async run(b) {
      for (const bad of ['../x', 'a/b', '', '.hidden', 'x'.repeat(201), 'sp ace', 'nul\u0000', 'ümlaut']) {
        await rejectsWith(
          () => b.put('objects', bad, bytes('x')),
          'E_STORE',
          `put key ${JSON.stringify(bad.slice(0, 20))}`,
        );
        await rejectsWith(() => b.get(bad, 'k'), 'E_STORE', `get ns ${JSON.stringify(bad.slice(0, 20))}`);
      }
      await rejectsWith(() => b.append('../audit', 'x'), 'E_STORE', 'append log name');
    },
  },
  {
    name: 'logs keep append order, are separate per name, and refuse a line with a newline',
    async run(b) {
      for (let i = 0; i < 5; i++) await b.append('audit', `line ${i}`);
      await b.append('other-log', 'o');
      eq(await b.readLog('audit'), ['line 0', 'line 1', 'line 2', 'line 3', 'line 4'], 'order');
      eq(await b.readLog('missing-log'), [], 'absent log');
      let threw = false;
      try {
        await b.append('audit', 'two\nlines');
      } catch {
        threw = true;
      }
      if (!threw) fail('a line with a newline was accepted');
      eq((await b.readLog('audit')).length, 5, 'nothing appended by the refused line');
    },
  },
  {
    name: 'concurrent appends all land, none torn',
    async run(b) {
      const lines = Array.from({ length: 40 }, (_, i) => `c${i}:` + 'x'.repeat(i * 50));
      await Promise.all(lines.map((l) => b.append('concurrent', l)));
      const got = await b.readLog('concurrent');
      eq([...got].sort(), [...lines].sort(), 'all lines, intact');
    },
  },
  {
    name: 'withLock serializes read-modify-write (no lost update) and releases on failure',
    async run(b) {
      const store = new Store(b);
      await Promise.all(
        Array.from({ length: 20 }, () => store.update<number>('counters', 'n', (old) => (old ?? 0) + 1)),
      );
      eq(await store.getJson('counters', 'n'), 20, 'counter');
      let threw = false;
      try {
        await b.withLock('fails', async () => {
          throw new Error('inner');
        });
      } catch {
        threw = true;
      }
      if (!threw) fail('the error inside withLock was swallowed');
      eq(await b.withLock('fails', async () => 'again'), 'again', 'lock released after a failure');
    },
  },
  {
    name: 'content-addressed objects are re-hashed on read: altered bytes give E_INTEGRITY',
    async run(b) {
      const store = new Store(b);
      const cid = await store.putObject(bytes('{"a":1}'));
      eq(text(await store.getObject(cid)), '{"a":1}', 'intact object');
      await b.put('objects', cid, bytes('{"a":2}'));
      await rejectsWith(() => store.getObject(cid), 'E_INTEGRITY', 'tampered object');
      await rejectsWith(() => store.getObject('not-a-cid'), 'E_STORE', 'malformed id');
    },
  },
  {
    name: 'no lost update across instances: read-modify-write racing on two instances counts every increment',
    async run(b, peer = b) {
      const stores = [new Store(b), new Store(peer)];
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          stores[i % 2]!.update<number>('counters', 'shared', (old) => (old ?? 0) + 1),
        ),
      );
      eq(await stores[0]!.getJson('counters', 'shared'), 30, 'counter seen by the first instance');
      eq(await stores[1]!.getJson('counters', 'shared'), 30, 'counter seen by the second instance');
    },
  },
  {
    name: 'a read-modify-write whose function throws changes nothing (compare-and-set: all or nothing)',
    async run(b) {
      const store = new Store(b);
      await store.putJson('cas', 'entry', { v: 1 });
      let threw = false;
      try {
        await store.update<{ v: number }>('cas', 'entry', () => {
          throw new Error('refused');
        });
      } catch {
        threw = true;
      }
      if (!threw) fail('the refusal inside update was swallowed');
      eq(await store.getJson('cas', 'entry'), { v: 1 }, 'entry after a refused update');
    },
  },
  {
    name: 'activation is compare-and-set: installs racing on two instances keep every revision, one active everywhere',
    async run(b, peer = b) {
      const regs = [new ToolRegistry(new Store(b)), new ToolRegistry(new Store(peer))];
      const manifest = (i: number) => ({
        name: 'racer',
        description: `revision ${i}`,
        parameters: { type: 'object', properties: {}, additionalProperties: false },
        execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async () => ${i};` },
      });
      const installed = await Promise.all(Array.from({ length: 8 }, (_, i) => regs[i % 2]!.install(manifest(i))));
      const activated = installed.filter((r) => r.activated);
      eq(activated.length, 1, 'installs that activated the new name');
      const binding = await new Store(b).getJson<{ active: string; revisions: string[] }>('bindings', 'racer');
      eq([...(binding?.revisions ?? [])].sort(), installed.map((r) => r.revision).sort(), 'revisions kept');
      eq(binding?.active, activated[0]?.revision, 'the active revision');
      // activations racing with and without approval: the approved ones win in some order, the others are refused
      const target = installed.map((r) => r.revision).filter((r) => r !== binding?.active);
      const results = await Promise.allSettled(
        target.map((rev, i) => regs[i % 2]!.activate('racer', rev, { approveReplacement: i % 2 === 0 })),
      );
      const refused = results.filter((r) => r.status === 'rejected');
      for (const r of refused)
        if ((r as PromiseRejectedResult).reason?.code !== 'E_APPROVAL_REQUIRED')
          fail(`an activation failed otherwise: ${String((r as PromiseRejectedResult).reason)}`);
      eq(refused.length, target.filter((_, i) => i % 2 === 1).length, 'activations refused without approval');
      const after = await Promise.all(regs.map((r) => r.resolve('racer')));
      eq(after[0]!.revision, after[1]!.revision, 'both instances resolve the same active revision');
      if (!target.filter((_, i) => i % 2 === 0).includes(after[0]!.revision))
        fail('the active revision is not one of the approved activations');
    },
  },
  {
    name: 'log appends from two instances all land once, each visible to both as soon as its append resolves',
    async run(b, peer = b) {
      const writers = [b, peer];
      await Promise.all(
        Array.from({ length: 40 }, async (_, i) => {
          await writers[i % 2]!.append('audit-shared', `rec ${i}`);
          const seen = await writers[(i + 1) % 2]!.readLog('audit-shared');
          if (!seen.includes(`rec ${i}`)) fail(`record ${i} was not visible to the other instance after its append`);
        }),
      );
      const all = await b.readLog('audit-shared');
      eq(all.length, 40, 'records');
      eq(new Set(all).size, 40, 'distinct records');
    },
  },
  {
    name: 'an object altered through another instance is refused on read with E_INTEGRITY',
    async run(b, peer = b) {
      const cid = await new Store(b).putObject(bytes('{"peer":true}'));
      await peer.put('objects', cid, bytes('{"peer":false}'));
      await rejectsWith(() => new Store(b).getObject(cid), 'E_INTEGRITY', 'object altered by the peer');
    },
  },
  {
    name: 'a generation, where the backend has one, moves with every record written or deleted, never with objects or tool storage',
    async run(b) {
      if (!b.generation) return;
      const g0 = b.generation();
      await b.put('pause', 'gen-a', bytes('{}'));
      const g1 = b.generation();
      if (g1 === undefined || g1 === g0) fail('a put did not move the generation');
      await b.delete('pause', 'gen-a');
      const g2 = b.generation();
      if (g2 === undefined || g2 === g1) fail('a delete did not move the generation');
      await new Store(b).putObject(bytes('{"gen":1}'));
      await b.put('tool-storage', 'gen-c', bytes('1'));
      eq(b.generation(), g2, 'generation after an object and tool storage were written');
      const store = new Store(b);
      await store.putJson('decisions', 'gen-b', { n: 1 });
      eq(await store.getJsonFresh('decisions', 'gen-b'), { n: 1 }, 'first read');
      await new Store(b).putJson('decisions', 'gen-b', { n: 2 });
      eq(await store.getJsonFresh('decisions', 'gen-b'), { n: 2 }, 'after another Store wrote it');
    },
  },
  {
    name: 'values survive large sizes byte for byte (1 MiB of every byte value)',
    async run(b) {
      const big = new Uint8Array(1024 * 1024);
      for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
      await b.put('objects-big', 'big', big);
      const got = await b.get('objects-big', 'big');
      if (!got || got.length !== big.length) fail('length differs');
      for (let i = 0; i < big.length; i++) if (got[i] !== big[i]) fail(`byte ${i} differs`);
    },
  },
];

/**
 * Run every case against fresh backends from `make` (with `peerOf`, a second backend over the same storage for the
 * cases about several instances); returns one row per case (never throws).
 */
export async function runStoreContract(
  make: () => Promise<StoreBackend>,
  filter?: (name: string) => boolean,
  peerOf?: (b: StoreBackend) => Promise<StoreBackend>,
): Promise<{ name: string; ok: boolean; detail: string }[]> {
  const rows: { name: string; ok: boolean; detail: string }[] = [];
  for (const c of STORE_CONTRACT) {
    if (filter && !filter(c.name)) continue;
    try {
      const b = await make();
      await c.run(b, peerOf ? await peerOf(b) : undefined);
      rows.push({ name: c.name, ok: true, detail: 'ok' });
    } catch (e) {
      rows.push({ name: c.name, ok: false, detail: e instanceof Error ? e.message : String(e) });
    }
  }
  return rows;
}
