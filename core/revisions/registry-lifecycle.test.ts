// Unit tests for the registry lifecycle: unique-prefix resolution, short ids, remove and gc.
import { describe, expect, it } from 'vitest';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { ToolRegistry } from './registry.js';
import { CID_HEADER, matchesPrefix, shortId, uniqueShortIds } from './refs.js';
import { StoreDecisions } from '../policy/gate.js';
import { SecretGrants } from '../capabilities/secrets.js';
import { TyError } from '../errors.js';
import type { ToolManifest } from '../../protocol/manifest.js';

const manifest = (n: number, name = 'double'): ToolManifest => ({
  name,
  description: 'Doubles x.',
  parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async (a) => a.x * ${n};` },
});

async function err(p: Promise<unknown>): Promise<TyError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TyError) return e;
    throw e;
  }
  throw new Error('expected a TyError');
}

const fresh = () => {
  const store = new Store(new MemoryStoreBackend());
  return { store, r: new ToolRegistry(store) };
};

describe('short ids and prefixes', () => {
  it('a short id is 12 digest characters after the constant CID head, and matches back as a prefix', async () => {
    const { r } = fresh();
    const a = await r.install(manifest(2));
    expect(a.revision.startsWith(CID_HEADER)).toBe(true);
    const s = shortId(a.revision);
    expect(s).toBe(a.revision.slice(CID_HEADER.length, CID_HEADER.length + 12));
    expect(matchesPrefix(a.revision, s)).toBe(true);
    expect(matchesPrefix(a.revision, a.revision.slice(0, 14))).toBe(true);
    expect(matchesPrefix(a.revision, s.slice(0, 7))).toBe(false);
  });

  it('an external revision (mcp:SERVER) is shown whole, never cut like a content id', () => {
    expect(shortId('mcp:everything')).toBe('mcp:everything');
    expect(shortId('mcp:a-very-long-server-name')).toBe('mcp:a-very-long-server-name');
  });

  it('uniqueShortIds lengthens ids that would collide', () => {
    const a = `${CID_HEADER}abcdefghijklmnopq`;
    const b = `${CID_HEADER}abcdefghijklmxyz`;
    const c = `${CID_HEADER}zzzzzzzzzzzzzzzz`;
    const m = uniqueShortIds([a, b, c]);
    expect(m.get(a)).toBe('abcdefghijklmn');
    expect(m.get(b)).toBe('abcdefghijklmx');
    expect(m.get(c)).toBe('zzzzzzzzzzzz');
  });

  it('NAME@PREFIX resolves a unique prefix of 8+ characters (short or full form), active or not', async () => {
    const { r } = fresh();
    const a = await r.install(manifest(2));
    const b = await r.install(manifest(3));
    const ra = await r.resolve(`double@${shortId(a.revision, 8)}`);
    expect(ra).toMatchObject({ revision: a.revision, active: true });
    const rb = await r.resolve(`double@${b.revision.slice(0, 20)}`);
    expect(rb).toMatchObject({ revision: b.revision, active: false });
  });

  it('an ambiguous prefix is refused listing every candidate; fewer than 8 characters is malformed', async () => {
    const { r } = fresh();
    const a = await r.install(manifest(2));
    const b = await r.install(manifest(3));
    await r.install(manifest(4, 'other'));
    const e = await err(r.resolve(`double@${CID_HEADER.slice(0, 8)}`));
    expect(e.code).toBe('E_UNKNOWN_TOOL');
    expect(e.message).toMatch(/ambiguous/);
    expect(e.data?.candidates).toEqual([a.revision, b.revision].sort());
    expect(e.message).toContain(shortId(a.revision, 20));
    expect(e.message).toContain(shortId(b.revision, 20));
    expect((await err(r.resolve('double@abcdefg'))).code).toBe('E_UNKNOWN_TOOL');
    expect((await err(r.resolve('double@zzzzzzzzzz'))).message).toMatch(
      /no revision of "double" starts with zzzzzzzzzz/,
    );
  });

  it('activate accepts a prefix and binds the full id', async () => {
    const { r } = fresh();
    await r.install(manifest(2));
    const b = await r.install(manifest(3));
    await r.activate('double', shortId(b.revision), { approveReplacement: true });
    expect((await r.resolve('double')).revision).toBe(b.revision);
  });
});

describe('remove', () => {
  it('needs approval, then unbinds the name; pinned NAME@REV still resolves until gc', async () => {
    const { r } = fresh();
    const a = await r.install(manifest(2));
    const refused = await err(r.remove('double'));
    expect(refused.code).toBe('E_APPROVAL_REQUIRED');
    expect(refused.message).not.toMatch(/tycli/);
    expect((await r.resolve('double')).revision).toBe(a.revision);
    const removed = await r.remove('double', { approveRemoval: true });
    expect(removed.active).toBe(a.revision);
    expect((await err(r.resolve('double'))).code).toBe('E_UNKNOWN_TOOL');
    expect((await r.resolve(`double@${a.revision}`)).revision).toBe(a.revision);
    expect((await r.resolve(`double@${shortId(a.revision)}`)).revision).toBe(a.revision);
    expect((await err(r.remove('double', { approveRemoval: true }))).code).toBe('E_UNKNOWN_TOOL');
  });
});

describe('gc', () => {
  it('removes only revisions no binding, permanent decision, pinned task, secret grant or storage references', async () => {
    const { store, r } = fresh();
    const active = await r.install(manifest(2));
    const loose = await r.install(manifest(3));
    const decided = await r.install(manifest(4));
    const pinned = await r.install(manifest(5));
    const granted = await r.install(manifest(6));
    const gone = await r.install(manifest(7, 'gone'));
    await r.remove('gone', { approveRemoval: true });
    await new StoreDecisions(store).add({
      kind: 'fetch',
      revision: decided.revision,
      toolName: 'double',
      target: 'https://a.example',
      access: 'read',
      allow: true,
      scope: 'permanent',
    });
    await store.putJson('tasks', 'bagaaieratask', {
      id: 'x',
      role: 'assistant',
      content: { type: 'functioncall', name: 'double', arguments: {}, toolRevision: pinned.revision },
    });
    await new SecretGrants(store).grant('TOKEN', { tool: 'double', revision: granted.revision, origins: [] });

    const dry = await r.gc({ dryRun: true });
    expect(dry.removed.map((x) => x.revision).sort()).toEqual([loose.revision, gone.revision].sort());
    expect(await store.getObject(loose.revision)).toBeDefined();

    const res = await r.gc();
    expect(res.removed.map((x) => x.revision).sort()).toEqual([loose.revision, gone.revision].sort());
    const reasons = Object.fromEntries(res.kept.map((k) => [k.revision, k.reasons]));
    expect(reasons[active.revision]).toEqual(['binding']);
    expect(reasons[decided.revision]).toEqual(['decision']);
    expect(reasons[pinned.revision]).toEqual(['task']);
    expect(reasons[granted.revision]).toEqual(['secret-grant']);
    expect(await store.getObject(loose.revision)).toBeUndefined();
    expect((await err(r.resolve(`double@${loose.revision}`))).code).toBe('E_UNKNOWN_TOOL');
    expect((await r.list()).find((t) => t.name === 'double')?.revisions).not.toContain(loose.revision);
    expect((await r.resolve(`double@${pinned.revision}`)).revision).toBe(pinned.revision);
    expect((await r.gc()).removed).toEqual([]);
  });

  it('revisions() lists every stored revision with its install date, unbound ones included', async () => {
    const { r } = fresh();
    const before = Date.now();
    const a = await r.install(manifest(2));
    const g = await r.install(manifest(2, 'gone'));
    await r.remove('gone', { approveRemoval: true });
    const revs = await r.revisions();
    expect(revs.map((x) => [x.name, x.revision, x.active])).toEqual([
      ['double', a.revision, true],
      ['gone', g.revision, false],
    ]);
    expect(Date.parse(revs[0]!.addedAt!)).toBeGreaterThanOrEqual(before - 1000);
  });
});
