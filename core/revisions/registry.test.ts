// Unit tests for the registry: revision ids, bindings, integrity on read.
import { describe, expect, it } from 'vitest';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { ToolRegistry, revisionId } from './registry.js';
import { TyError } from '../errors.js';
import type { ToolManifest } from '../../protocol/manifest.js';

const manifest = (
  source = 'export default async (a) => a.x * 2;',
  extra: Partial<ToolManifest> = {},
): ToolManifest => ({
  name: 'double',
  description: 'Doubles x.',
  parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
  ...extra,
});

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return e instanceof TyError ? e.code : `not a TyError: ${String(e)}`;
  }
  return 'resolved';
}

describe('revision ids', () => {
  it('are equal for equal manifests regardless of key order, and CIDv1 json/sha2-256', async () => {
    const a = manifest();
    const b = JSON.parse(
      JSON.stringify({ execution: a.execution, parameters: a.parameters, description: a.description, name: a.name }),
    );
    expect(await revisionId(a)).toBe(await revisionId(b));
    expect(await revisionId(a)).toMatch(/^bagaaiera[a-z2-7]+$/);
  });
  it('change with any change, source included', async () => {
    const base = await revisionId(manifest());
    expect(await revisionId(manifest('export default async (a) => a.x * 3;'))).not.toBe(base);
    expect(await revisionId(manifest(undefined, { description: 'Doubles x!' }))).not.toBe(base);
    expect(await revisionId(manifest(undefined, { limits: { timeoutMs: 1000 } }))).not.toBe(base);
  });
  it('is stable across releases (golden value; changing the codec is a breaking change)', async () => {
    expect(await revisionId(manifest())).toBe(GOLDEN);
  });
});
// Computed independently: python3 json.dumps(sort_keys, compact) -> sha256 -> CIDv1 bytes [1, 0x80 0x04 (json), 0x12
// 0x20, digest] -> base32.
const GOLDEN = 'bagaaieraudnpizzxp2fduvbgeqjkhn4azpvulsjq7n2s73zrxb5lvn5mtrla';

describe('ToolRegistry', () => {
  const fresh = () => new ToolRegistry(new Store(new MemoryStoreBackend()));

  it('installs, activates a new name, resolves by name and name@rev', async () => {
    const r = fresh();
    const a = await r.install(manifest());
    expect(a).toMatchObject({ created: true, activated: true });
    expect((await r.resolve('double')).revision).toBe(a.revision);
    expect((await r.resolve(`double@${a.revision}`)).active).toBe(true);
    const again = await r.install(manifest());
    expect(again).toMatchObject({ revision: a.revision, created: false, activated: false });
  });

  it('needs explicit approval to replace an active binding; a pinned call keeps the old revision', async () => {
    const r = fresh();
    const a = await r.install(manifest());
    const b = await r.install(manifest('export default async (a) => a.x * 3;'));
    expect(b.activated).toBe(false);
    expect(await code(r.activate('double', b.revision))).toBe('E_APPROVAL_REQUIRED');
    expect((await r.resolve('double')).revision).toBe(a.revision);
    await r.activate('double', b.revision, { approveReplacement: true });
    expect((await r.resolve('double')).revision).toBe(b.revision);
    const pinned = await r.resolve(`double@${a.revision}`);
    expect(pinned.manifest.execution).toMatchObject({ source: 'export default async (a) => a.x * 2;' });
    expect(pinned.active).toBe(false);
  });

  it('refuses a new name that differs from a bound one only in letter case; the first stays as it was', async () => {
    const r = fresh();
    const a = await r.install(manifest());
    let err: unknown;
    await r.install({ ...manifest(), name: 'Double' }).catch((e: unknown) => (err = e));
    expect(err).toBeInstanceOf(TyError);
    expect((err as TyError).code).toBe('E_INVALID_MANIFEST');
    expect((err as TyError).data).toEqual({ path: 'name', conflictsWith: 'double' });
    expect((err as TyError).message).toContain('differ only in letter case');
    expect((await r.list()).map((t) => t.name)).toEqual(['double']);
    expect((await r.resolve('double')).revision).toBe(a.revision);
    // the same name again, and an unrelated name, are fine
    expect((await r.install(manifest('export default async (a) => a.x * 4;'))).updateAvailable).toBe(true);
    expect((await r.install({ ...manifest(), name: 'triple' })).activated).toBe(true);
  });

  it("on a case-insensitive store (keys folded, as on macOS or Windows) another name's record is never extended", async () => {
    /** A backend whose keys compare without case, as files do on APFS and NTFS by default. */
    class FoldingBackend extends MemoryStoreBackend {
      override get(ns: string, key: string) {
        return super.get(ns, key.toLowerCase());
      }
      override put(ns: string, key: string, bytes: Uint8Array) {
        return super.put(ns, key.toLowerCase(), bytes);
      }
      override delete(ns: string, key: string) {
        return super.delete(ns, key.toLowerCase());
      }
    }
    const r = new ToolRegistry(new Store(new FoldingBackend()));
    await r.install({ ...manifest(), name: 'Double' });
    const before = await r.list();
    expect(await code(r.install({ ...manifest('export default async (a) => a.x * 5;'), name: 'DOUBLE' }))).toBe(
      'E_INVALID_MANIFEST',
    );
    expect(await r.list()).toEqual(before);
  });

  it('refuses invalid manifests with E_INVALID_MANIFEST naming the field', async () => {
    const r = fresh();
    for (const bad of [
      { ...manifest(), name: 'bad name!' },
      { ...manifest(), extra: 1 },
      { ...manifest(), execution: { kind: 'sandboxed-code', runtime: 'cobol', source: 'x' } },
      { ...manifest(), parameters: { type: 'objekt' } },
    ]) {
      const err = await r.install(bad).catch((e: TyError) => e);
      expect(err).toBeInstanceOf(TyError);
      expect((err as TyError).code).toBe('E_INVALID_MANIFEST');
    }
  });

  it('refuses a name that does not start with a letter or digit, naming the rule; every other valid name still installs', async () => {
    const r = fresh();
    for (const name of ['-rf', '--help', '-', '_x', '__server__tool', '_']) {
      const err = await r.install({ ...manifest(), name }).catch((e: TyError) => e);
      expect(err, name).toBeInstanceOf(TyError);
      expect((err as TyError).code).toBe('E_INVALID_MANIFEST');
      expect((err as TyError).message).toContain('start with a letter or digit');
      expect((err as TyError).data).toEqual({ path: 'name' });
    }
    for (const name of [
      'double',
      'get-weather',
      'get_weather',
      'everything__echo',
      'srv-1__tool_name',
      '3d',
      '9',
      'A',
      'x'.repeat(64),
      'a-',
      'b_',
    ]) {
      const { manifest: m } = await r.install({ ...manifest(), name });
      expect(m.name).toBe(name);
      expect((await r.resolve(name)).name).toBe(name);
    }
  });

  it('re-hashes on read and refuses a tampered object with E_INTEGRITY', async () => {
    const backend = new MemoryStoreBackend();
    const r = new ToolRegistry(new Store(backend));
    const a = await r.install(manifest());
    const bytes = (await backend.get('objects', a.revision))!;
    const tampered = new TextDecoder().decode(bytes).replace('a.x * 2', 'a.x * 9');
    await backend.put('objects', a.revision, new TextEncoder().encode(tampered));
    expect(await code(r.resolve('double'))).toBe('E_INTEGRITY');
  });

  it('keeps a verified revision in memory: later resolves read nothing while the store vouches for the binding, and see a binding moved through another registry at once', async () => {
    const backend = new MemoryStoreBackend();
    const reads: string[] = [];
    const get = backend.get.bind(backend);
    backend.get = async (ns, key) => (reads.push(ns), get(ns, key));
    const r = new ToolRegistry(new Store(backend));
    const other = new ToolRegistry(new Store(backend)); // another process sharing the store
    const a = await r.install(manifest());
    const b = await other.install({ ...manifest(), description: 'second' });
    await r.resolve('double');
    reads.length = 0;
    expect((await r.resolve('double')).revision).toBe(a.revision);
    expect(reads).toEqual([]); // the store's generation vouches for the binding kept in memory
    await other.activate('double', b.revision, { approveReplacement: true });
    expect((await r.resolve('double')).revision).toBe(b.revision);
    // a verified revision that gc removed elsewhere is no longer served from memory
    await other.activate('double', a.revision, { approveReplacement: true });
    await r.resolve(`double@${b.revision}`);
    await other.gc();
    expect(await code(r.resolve(`double@${b.revision}`))).toBe('E_UNKNOWN_TOOL');
  });

  it('reports unknown tools and malformed references with E_UNKNOWN_TOOL', async () => {
    const r = fresh();
    expect(await code(r.resolve('nope'))).toBe('E_UNKNOWN_TOOL');
    expect(await code(r.resolve('../etc'))).toBe('E_UNKNOWN_TOOL');
    const a = await r.install(manifest());
    const other = await r.install({ ...manifest(), name: 'other' });
    expect(await code(r.resolve(`double@${other.revision}`))).toBe('E_UNKNOWN_TOOL');
    expect(await code(r.resolve(`double@${a.revision.slice(0, -2)}aa`))).toBe('E_UNKNOWN_TOOL');
  });

  it('keeps natives in memory only', async () => {
    const backend = new MemoryStoreBackend();
    const r = new ToolRegistry(new Store(backend));
    const a = await r.install({ ...manifest(), execution: { kind: 'trusted-native', entry: 'double' } });
    r.registerNative(a.revision, async (x) => x);
    expect(r.getNative(a.revision)).toBeTypeOf('function');
    expect(new ToolRegistry(new Store(backend)).getNative(a.revision)).toBeUndefined();
  });
});

describe('repair', () => {
  it('adding the same manifest again replaces an altered stored copy', async () => {
    const backend = new MemoryStoreBackend();
    const r = new ToolRegistry(new Store(backend));
    const a = await r.install(manifest());
    const bytes = (await backend.get('objects', a.revision))!;
    await backend.put(
      'objects',
      a.revision,
      new TextEncoder().encode(new TextDecoder().decode(bytes).replace('a.x * 2', 'a.x * 9')),
    );
    expect(await code(r.resolve('double'))).toBe('E_INTEGRITY');
    const again = await r.install(manifest());
    expect(again).toMatchObject({ revision: a.revision, created: false, repaired: true });
    expect((await r.resolve('double')).manifest.execution).toMatchObject({
      source: 'export default async (a) => a.x * 2;',
    });
    expect(await r.install(manifest())).toMatchObject({ created: false, repaired: false });
  });
});

describe('references by prefix, binding removal, install times', () => {
  const fresh = () => new ToolRegistry(new Store(new MemoryStoreBackend()));
  it('resolves NAME@PREFIX and a bare unique prefix; an ambiguous or unknown prefix is E_UNKNOWN_TOOL', async () => {
    const r = fresh();
    const a = await r.install(manifest());
    const b = await r.install(manifest('export default async (a) => a.x * 3;'));
    const uniq = (x: string, y: string) => {
      let i = 0;
      while (x[i] === y[i]) i++;
      return x.slice(0, i + 1);
    };
    expect((await r.resolve(`double@${uniq(b.revision, a.revision)}`)).revision).toBe(b.revision);
    expect((await r.resolve(uniq(b.revision, a.revision))).revision).toBe(b.revision);
    expect((await r.resolve(uniq(b.revision, a.revision))).active).toBe(false);
    expect(await code(r.resolve('double@bagaaiera'))).toBe('E_UNKNOWN_TOOL'); // every CID starts so: ambiguous
    expect(await code(r.resolve('bagaaiera'))).toBe('E_UNKNOWN_TOOL');
    expect(await code(r.resolve('double@bzzzzzzz'))).toBe('E_UNKNOWN_TOOL');
  });
  it('removeBinding unbinds NAME but keeps NAME@REV, and a later install or activate binds again', async () => {
    const r = fresh();
    const a = await r.install(manifest());
    expect(await r.removeBinding('double')).toBe(a.revision);
    expect(await code(r.resolve('double'))).toBe('E_UNKNOWN_TOOL');
    expect((await r.resolve(`double@${a.revision}`)).active).toBe(false);
    expect(await code(r.removeBinding('double'))).toBe('E_UNKNOWN_TOOL');
    await r.activate('double', a.revision);
    expect((await r.resolve('double')).revision).toBe(a.revision);
  });
  it('records when each revision was installed', async () => {
    const r = fresh();
    const a = await r.install(manifest());
    const at = (await r.binding('double'))?.addedAt?.[a.revision];
    expect(typeof at).toBe('string');
    expect(Number.isNaN(Date.parse(at!))).toBe(false);
  });
});

describe('install: source syntax and updates', () => {
  const js = (source: string, name = 'syn') => ({
    name,
    description: 'd',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
  });
  it('refuses JavaScript that does not parse, naming line and column, and stores nothing', async () => {
    const { Store } = await import('../store/contract.js');
    const { MemoryStoreBackend } = await import('../store/memory.js');
    const { ToolRegistry } = await import('./registry.js');
    const reg = new ToolRegistry(new Store(new MemoryStoreBackend()));
    const e = await reg.install(js('export default async () => {\n  return 1 +;\n}')).then(
      () => undefined,
      (x: unknown) => x as { code: string; message: string; data: Record<string, unknown> },
    );
    expect(e?.code).toBe('E_INVALID_MANIFEST');
    expect(e?.message).toContain('line 2, column 13');
    expect(e?.data).toMatchObject({ path: 'execution.source', line: 2, column: 13 });
    expect(await reg.list()).toEqual([]);
    await expect(reg.install(js('import x from "./y.js";\nexport default async () => x ?? 1;'))).rejects.toMatchObject({
      code: 'E_INVALID_MANIFEST',
      data: { import: './y.js' },
    });
    expect(await reg.list()).toEqual([]);
    await expect(
      reg.install(js('export default async () => (await import("./y.js")).default ?? 1;')),
    ).resolves.toMatchObject({ activated: true });
  });
  it('a new revision under an active name: updateAvailable in the result and to listeners; the old one stays active', async () => {
    const { Store } = await import('../store/contract.js');
    const { MemoryStoreBackend } = await import('../store/memory.js');
    const { ToolRegistry } = await import('./registry.js');
    const reg = new ToolRegistry(new Store(new MemoryStoreBackend()));
    const seen: unknown[] = [];
    reg.onUpdateAvailable((e) => seen.push(e));
    const a = await reg.install(js('export default async () => 1', 'up'));
    expect(a).toMatchObject({ activated: true, updateAvailable: false });
    const b = await reg.install(js('export default async () => 2', 'up'));
    expect(b).toMatchObject({ activated: false, updateAvailable: true, active: a.revision });
    expect(seen).toEqual([{ name: 'up', active: a.revision, revision: b.revision }]);
    expect((await reg.resolve('up')).revision).toBe(a.revision);
  });
});
