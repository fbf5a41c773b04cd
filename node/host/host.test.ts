// Unit tests for node/host/host.ts assembly: OS sandbox posture (fail closed / warn once), no runtimes for read-only
// commands; test side.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeHost } from './host.js';
import type { HostIO, NodeHostOptions } from './options.js';
import { detectPython, pythonForSandbox, pythonReachableBy, pythonToolManifest } from '../python/native-tool.js';
import { revisionId } from '../../core/revisions/registry.js';
import { setProbeOverrideForTests } from '../os-sandbox/probe.js';
import type { Asker } from '../../core/ask/router.js';
import type { Question } from '../../core/exec/runtime.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tyhost-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});
afterEach(() => setProbeOverrideForTests(undefined));

function io(): HostIO & { err(): string } {
  const stderr = new PassThrough();
  let err = '';
  stderr.on('data', (d) => (err += String(d)));
  return { stdout: new PassThrough(), stderr, stdin: new PassThrough(), interactive: false, err: () => err };
}

const unavailable = { platform: 'linux', backend: 'none' as const, available: false, reason: 'test: no backend' };
const manifest = {
  name: 'echo',
  description: '',
  parameters: { type: 'object' },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async (a) => a' },
};

describe('createNodeHost', () => {
  it('--sandbox required fails closed with E_SANDBOX_UNAVAILABLE when no OS sandbox works', async () => {
    setProbeOverrideForTests(unavailable);
    await expect(
      createNodeHost({ home: join(tmp, 'req'), globals: { sandbox: 'required', allow: [], deny: [] }, io: io() }),
    ).rejects.toMatchObject({ code: 'E_SANDBOX_UNAVAILABLE', message: expect.stringContaining('test: no backend') });
  });

  it('auto warns once per process and says what the fallback means; off says nothing', async () => {
    setProbeOverrideForTests(unavailable);
    const off = io();
    const h0 = await createNodeHost({
      home: join(tmp, 'off'),
      globals: { sandbox: 'off', allow: [], deny: [] },
      io: off,
    });
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
    expect(await h.invoker.invoke('echo', { a: 1 })).toMatchObject({
      ok: true,
      result: 'pooled',
      feedback: ['checked'],
    });
    expect(calls).toEqual([{ a: 1 }]);
    await h.close();
  });
});

describe('built-in python tool', () => {
  const pyManifestRev = () => revisionId(pythonToolManifest());
  const python = detectPython();

  it('is offered in memory with the CID of its manifest; an installed tool of the same name wins unless pinned', async () => {
    const h = await createNodeHost({
      home: join(tmp, 'py-list'),
      startSandboxes: false,
      python: python ?? { path: '/usr/bin/python3', version: '3.0.0', prefixes: ['/usr'] },
    });
    const rev = await pyManifestRev();
    expect(await h.registry.list()).toEqual([{ name: 'python', active: rev, revisions: [rev], builtin: true }]);
    expect(await h.registry.resolve('python')).toMatchObject({ name: 'python', revision: rev, active: true });
    // Nothing was stored for it.
    expect(await h.store.backend.list('bindings')).toEqual([]);
    const mine = await h.registry.install({ ...manifest, name: 'python' });
    expect((await h.registry.resolve('python')).revision).toBe(mine.revision);
    expect(await h.registry.resolve(`python@${rev}`)).toMatchObject({
      revision: rev,
      active: false,
      manifest: { execution: { kind: 'trusted-native' } },
    });
    expect((await h.registry.list()).map((t) => [t.name, t.active, t.builtin])).toEqual([
      ['python', mine.revision, undefined],
    ]);
    await h.close();
  });

  it('a stored tool whose name differs from the built-in only in case is refused (finding 9 of issue 26)', async () => {
    const h = await createNodeHost({
      home: join(tmp, 'py-case'),
      startSandboxes: false,
      python: python ?? { path: '/usr/bin/python3', version: '3.0.0', prefixes: ['/usr'] },
    });
    for (const name of ['Python', 'PYTHON'])
      await expect(h.registry.install({ ...manifest, name })).rejects.toMatchObject({
        code: 'E_INVALID_MANIFEST',
        data: { path: 'name', conflictsWith: 'python' },
      });
    expect(await h.store.backend.list('bindings')).toEqual([]);
    await h.close();
  });

  it('python: false never offers it', async () => {
    const h = await createNodeHost({ home: join(tmp, 'py-off'), startSandboxes: false, python: false });
    expect(await h.registry.list()).toEqual([]);
    await expect(h.registry.resolve('python')).rejects.toMatchObject({ code: 'E_UNKNOWN_TOOL' });
    await h.close();
  });

  it.skipIf(!python)(
    'asks once per session with the plain authority question, then runs; a refusal runs nothing',
    async () => {
      const asked: Question[] = [];
      const asker = (allow: boolean): Asker => ({
        ask: async (q) => {
          asked.push(q);
          return allow
            ? { allow: true, scope: 'session', channel: 'test' }
            : { allow: false, reason: 'refused', channel: 'test' };
        },
      });
      const base: Omit<NodeHostOptions, 'home'> = {
        startSandboxes: true,
        globals: { sandbox: 'off', allow: [], deny: [] },
        python: python!,
        pool: { call: async () => null },
      };
      const h = await createNodeHost({ ...base, home: join(tmp, 'py-ask'), asker: asker(true) });
      const r1 = await h.invoker.invoke('python', { code: 'print(6*7)' });
      const r2 = await h.invoker.invoke('python', { code: 'print(1)' });
      expect(r1).toMatchObject({ ok: true, result: { exitCode: 0, stdout: '42\n' } });
      expect(r2).toMatchObject({ ok: true, result: { stdout: '1\n' } });
      expect(asked).toHaveLength(1);
      expect(asked[0]!.details?.join('\n')).toContain('The code runs as YOU');
      expect(asked[0]!.suggestedRule).toBe('python(*)');
      await h.close();

      const marker = join(tmp, 'py-refused-marker');
      const h2 = await createNodeHost({ ...base, home: join(tmp, 'py-no'), asker: asker(false) });
      const r3 = await h2.invoker.invoke('python', { code: `open(${JSON.stringify(marker)}, "w").write("x")` });
      expect(r3).toMatchObject({ ok: false, error: { code: 'E_CAPABILITY_DENIED' } });
      expect(existsSync(marker)).toBe(false);
      await h2.close();
    },
  );
});

describe('interpreter reachability for the sandbox user', () => {
  const who = { uid: 65534, gid: 65534 };
  it('a python under a 0700 folder is unreachable; the same under 0755 folders is reachable', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tyreach-'));
    try {
      await mkdir(join(dir, 'bin'));
      await writeFile(join(dir, 'bin', 'python3'), '#!/bin/sh\n', { mode: 0o755 });
      const info = { path: join(dir, 'bin', 'python3'), version: '3.11.0', prefixes: [dir] };
      await chmod(dir, 0o700);
      expect(pythonReachableBy(info, who)).toBe(false);
      await chmod(dir, 0o755);
      expect(pythonReachableBy(info, who)).toBe(true);
      await chmod(join(dir, 'bin', 'python3'), 0o700);
      expect(pythonReachableBy(info, who)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('falls back to the system interpreter with a note, and says so plainly when none is reachable', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tyreach-'));
    try {
      await writeFile(join(dir, 'python3'), '#!/bin/sh\n', { mode: 0o755 });
      await chmod(dir, 0o700);
      const hidden = { path: join(dir, 'python3'), version: '3.12.0', prefixes: [dir] };
      const sys = { path: '/bin/sh', version: '3.11.2', prefixes: ['/usr'] }; // any file every user can run
      const chosen = pythonForSandbox(hidden, who, () => sys);
      expect(chosen.python).toBe(sys);
      expect(chosen.note).toContain("not reachable by the sandbox's unprivileged user (checked as uid 65534");
      expect(() => pythonForSandbox(hidden, who, () => undefined)).toThrow(
        expect.objectContaining({ code: 'E_SANDBOX_UNAVAILABLE', message: expect.stringContaining('--sandbox off') }),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
