// Unit tests for node/host.ts assembly: OS sandbox posture (fail closed / warn once), no runtimes for read-only commands; test side.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeHost } from './host.js';
import { setProbeOverrideForTests } from './os-sandbox/probe.js';
import type { CliIO } from './cli/types.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tyhost-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});
afterEach(() => setProbeOverrideForTests(undefined));

function io(): CliIO & { err(): string } {
  const stderr = new PassThrough();
  let err = '';
  stderr.on('data', (d) => (err += String(d)));
  return { stdout: new PassThrough(), stderr, stdin: new PassThrough(), interactive: false, err: () => err };
}

const unavailable = { platform: 'linux', backend: 'none' as const, available: false, reason: 'test: no backend' };
const manifest = { name: 'echo', description: '', parameters: { type: 'object' }, execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async (a) => a' } };

describe('createNodeHost', () => {
  it('--sandbox required fails closed with E_SANDBOX_UNAVAILABLE when no OS sandbox works', async () => {
    setProbeOverrideForTests(unavailable);
    await expect(createNodeHost({ home: join(tmp, 'req'), globals: { sandbox: 'required', allow: [], deny: [] }, io: io() })).rejects.toMatchObject({ code: 'E_SANDBOX_UNAVAILABLE', message: expect.stringContaining('test: no backend') });
  });

  it('auto warns once per process and says what the fallback means; off says nothing', async () => {
    setProbeOverrideForTests(unavailable);
    const off = io();
    const h0 = await createNodeHost({ home: join(tmp, 'off'), globals: { sandbox: 'off', allow: [], deny: [] }, io: off });
    await h0.close();
    expect(off.err()).toBe('');
    const a = io();
    const h1 = await createNodeHost({ home: join(tmp, 'auto'), globals: { allow: [], deny: [] }, io: a });
    const h2 = await createNodeHost({ home: join(tmp, 'auto'), globals: { allow: [], deny: [] }, io: a });
    await h1.close();
    await h2.close();
    expect(a.err().match(/warning: no OS-level sandbox/g)).toHaveLength(1);
    expect(a.err()).toContain('does not block network access');
  });

  it('creates a private home and store; read-only commands start no sandbox runtime', async () => {
    const home = join(tmp, 'ro');
    const h = await createNodeHost({ home, startSandboxes: false });
    expect((await stat(home)).mode & 0o777).toBe(0o700);
    expect((await stat(join(home, 'store'))).mode & 0o777).toBe(0o700);
    await h.registry.install(manifest);
    expect(await h.invoker.invoke('echo', {})).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_UNAVAILABLE' } });
    await h.close();
    await h.close();
  });

  it('uses an injected pool and gate', async () => {
    const calls: unknown[] = [];
    const h = await createNodeHost({
      home: join(tmp, 'inj'),
      pool: { call: async (_s, args) => (calls.push(args), 'pooled') },
      gate: { run: async (_r, exec) => ({ value: await exec(), feedback: ['checked'] }), authorize: async () => {} },
      capabilities: () => async () => null,
    });
    await h.registry.install(manifest);
    expect(await h.invoker.invoke('echo', { a: 1 })).toMatchObject({ ok: true, result: 'pooled', feedback: ['checked'] });
    expect(calls).toEqual([{ a: 1 }]);
    await h.close();
  });
});
