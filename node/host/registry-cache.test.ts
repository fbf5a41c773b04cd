// The registry's in-memory verified revisions stay correct across processes sharing one file store; test side.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileStoreBackend } from '../store/file-store.js';
import { Store } from '../../core/store/contract.js';
import { ToolRegistry } from '../../core/revisions/registry.js';

const run = promisify(execFile);
const manifest = (source: string) => ({
  name: 'double',
  description: 'doubles x',
  parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
  execution: { kind: 'sandboxed-code' as const, runtime: 'javascript' as const, source },
});

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'ty-regcache-'));
});
afterEach(() => rm(root, { recursive: true, force: true }));

describe('verified revisions across processes', () => {
  it('a binding moved and a revision collected by another process are seen by the next resolve in this one', async () => {
    const dir = join(root, 'store');
    const r = new ToolRegistry(new Store(new FileStoreBackend(dir)));
    const a = await r.install(manifest('export default async (a) => a.x * 2;'));
    expect((await r.resolve('double')).revision).toBe(a.revision);
    expect((await r.resolve('double')).revision).toBe(a.revision); // now served from memory
    const url = (p: string) => JSON.stringify(pathToFileURL(join(import.meta.dirname, '..', '..', p)).href);
    // another process installs a second revision, makes it active, then collects the first one
    const child = `
      const { FileStoreBackend } = await import(${url('node/store/file-store.ts')});
      const { Store } = await import(${url('core/store/contract.ts')});
      const { ToolRegistry } = await import(${url('core/revisions/registry.ts')});
      const r = new ToolRegistry(new Store(new FileStoreBackend(process.argv[1])));
      const b = await r.install(${JSON.stringify(manifest('export default async (a) => a.x * 3;'))});
      await r.activate('double', b.revision, { approveReplacement: true });
      const g = await r.gc();
      process.stdout.write(JSON.stringify({ b: b.revision, removed: g.removed.map((x) => x.revision) }));`;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', child, dir], {
      timeout: 60_000,
    });
    const out = JSON.parse(stdout) as { b: string; removed: string[] };
    expect(out.removed).toEqual([a.revision]);
    const now = await r.resolve('double');
    expect(now.revision).toBe(out.b);
    expect(now.manifest.execution).toMatchObject({ source: 'export default async (a) => a.x * 3;' });
    await expect(r.resolve(`double@${a.revision}`)).rejects.toMatchObject({ code: 'E_UNKNOWN_TOOL' });
  }, 90_000);
});
