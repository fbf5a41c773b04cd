// Tests of the Node runner's V8 code cache (node/runner/sandbox-runner-entry.cjs, build-code-cache.mjs) with real node,
// permission-model and bubblewrap subprocesses; trusted side.
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../core/exec/runtime.js';
import { createBwrapWrapper } from '../os-sandbox/bwrap.js';
import { probeUncached } from '../os-sandbox/probe.js';
import { NodeSandboxRuntime, runnerFiles, runnerPath, type SpawnWrapper } from '../sandbox/runtime.js';
import { codeCacheMatches, guestFile, nodeRunnerSources, permissionFlag } from '../sandbox/engines.js';

const require = createRequire(import.meta.url);
const ENTRY = runnerPath('node');
const DIR = dirname(ENTRY);
const CACHE = join(DIR, 'sandbox-runner.cache');
const entry = require(ENTRY) as {
  MAGIC: string;
  SOURCES: string[];
  cachedDataFor(cache: Buffer, sources: Buffer[]): Buffer | undefined;
};

const spec = (source: string, i = 0) => ({
  revision: `bcodecache${i}`,
  manifest: {
    name: 'cc',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code' as const, runtime: 'javascript' as const, source },
  },
  limits: { ...DEFAULT_LIMITS },
});
const callOpts = () => ({
  signal: new AbortController().signal,
  limits: { ...DEFAULT_LIMITS },
  onCapability: async () => {
    throw new Error('none');
  },
});

/** The command line of a default JavaScript sandbox (permission flags, V8 flags, entry last). */
function sandboxCommand() {
  return new NodeSandboxRuntime({ engine: 'node' }).command(spec(''));
}
/** The V8 flags of that command line, without the permission model and the entry. */
function v8Flags(): string[] {
  const c = sandboxCommand();
  return c.args.slice(0, -1).filter((a) => !/^--(experimental-)?permission$|^--allow-/.test(a));
}

/** Spawn `args` (node), send `load` for `source` once ready, resolve with the `ready` message and the load answer. */
function handshake(
  args: string[],
  source = 'export default async () => 1',
): Promise<{ ready: Record<string, unknown>; loaded: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, args, { env: {}, stdio: ['pipe', 'pipe', 'pipe'] });
    let buf = '';
    let err = '';
    let ready: Record<string, unknown> | undefined;
    const timer = setTimeout(() => {
      c.kill('SIGKILL');
      reject(new Error(`no answer: ${err}`));
    }, 15_000);
    c.stderr.on('data', (d) => (err += d));
    c.stdout.setEncoding('utf8');
    c.stdout.on('data', (d: string) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
        const m = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
        buf = buf.slice(nl + 1);
        if (m.type === 'ready') {
          ready = m;
          c.stdin.write(`${JSON.stringify({ v: 1, type: 'load', runtime: 'javascript', source })}\n`);
        } else if (m.type === 'loaded') {
          clearTimeout(timer);
          c.kill('SIGKILL');
          resolve({ ready: ready as Record<string, unknown>, loaded: m });
        }
      }
    });
  });
}

describe("the Node runner's code cache", () => {
  it('exists after the build, and a default sandbox (its grants and V8 flags) compiles the runner from it', () => {
    expect(existsSync(CACHE), 'node/runner/sandbox-runner.cache is written by `npm run build`').toBe(true);
    expect(codeCacheMatches(DIR)).toBe(true);
    // The host compared the cache's copies with the source files: the sandbox gets the entry and the cache only.
    expect(runnerFiles('node')).toEqual([ENTRY, CACHE]);
    // The host and the entry name the same files, in the same order (the order of the cache's copies).
    expect(entry.SOURCES).toEqual([
      guestFile(DIR, 'commons.mjs'),
      guestFile(DIR, 'core.mjs'),
      join(DIR, 'sandbox-runner.cjs'),
    ]);
    expect(nodeRunnerSources(DIR)).toEqual(entry.SOURCES);
    expect(runnerFiles('node', { codeCache: false })).toEqual([ENTRY, ...entry.SOURCES]);
    const c = sandboxCommand();
    expect(c.args.at(-1)).toBe(ENTRY);
    expect(c.args.filter((a) => a.startsWith('--allow-fs-read='))).toEqual([
      `--allow-fs-read=${ENTRY}`,
      `--allow-fs-read=${CACHE}`,
    ]);
    expect(c.readOnlyPaths).toEqual([process.execPath, ENTRY, CACHE]);
    // The sandbox's own command line with the entry replaced by a check of what the entry does with the cache.
    const r = spawnSync(
      process.execPath,
      [
        ...c.args.slice(0, -1),
        '-e',
        `process.stdout.write(String(require(${JSON.stringify(ENTRY)}).compileRunner().cacheUsed))`,
      ],
      { env: {}, encoding: 'utf8', timeout: 30_000 },
    );
    expect(r.stdout, r.stderr).toBe('true');
    // Under other V8 flags (here: a larger heap) V8 rejects it and the runner is compiled from its files.
    const other = spawnSync(
      process.execPath,
      [
        ...c.args.slice(0, -1).map((a) => (a.startsWith('--max-old-space-size=') ? '--max-old-space-size=300' : a)),
        '-e',
        `process.stdout.write(String(require(${JSON.stringify(ENTRY)}).compileRunner().cacheUsed))`,
      ],
      { env: {}, encoding: 'utf8', timeout: 30_000 },
    );
    expect(other.stdout, other.stderr).toBe('false');
  });

  it('accepts only a cache holding exactly the bytes of every file', () => {
    const sources = entry.SOURCES.map((f) => readFileSync(f));
    const file = (s: Buffer[], data: Buffer) =>
      Buffer.concat([Buffer.from(`${entry.MAGIC} ${s.map((b) => b.length).join(' ')}\n`), ...s, data]);
    const data = Buffer.from('v8 data');
    expect(entry.cachedDataFor(file(sources, data), sources)?.equals(data)).toBe(true);
    for (let i = 0; i < sources.length; i++) {
      const edited = sources.map((b) => Buffer.from(b));
      const b = edited[i]!;
      b[b.length - 2] = (b[b.length - 2] as number) ^ 1; // same length, one byte different
      expect(entry.cachedDataFor(file(edited, data), sources), entry.SOURCES[i]).toBeUndefined();
    }
    expect(entry.cachedDataFor(file(sources.slice(1), data), sources)).toBeUndefined(); // a file missing
    expect(entry.cachedDataFor(file(sources, Buffer.alloc(0)), sources)).toBeUndefined();
    expect(entry.cachedDataFor(Buffer.from('garbage\n'), sources)).toBeUndefined();
    expect(entry.cachedDataFor(Buffer.alloc(0), sources)).toBeUndefined();
  });

  describe('a cache made from other source of the same length', () => {
    let dir: string;
    let pkg: string;
    beforeAll(() => {
      // A package layout: the runner in node/runner/, the guest runtime it compiles in core/guest/.
      pkg = mkdtempSync(join(tmpdir(), 'tysandbox-code-cache-'));
      chmodSync(pkg, 0o755);
      dir = join(pkg, 'node', 'runner');
      mkdirSync(dir, { recursive: true });
      mkdirSync(join(pkg, 'core', 'guest'), { recursive: true });
      for (const f of ['commons.mjs', 'core.mjs'] as const) copyFileSync(guestFile(DIR, f), guestFile(dir, f));
    });
    afterAll(() => rmSync(pkg, { recursive: true, force: true }));

    it('is ignored: the runner runs its own source (V8 alone would run the stale code)', async () => {
      const real = readFileSync(join(DIR, 'sandbox-runner.cjs'), 'utf8');
      // The variant differs in one letter of the ready message (the length is the same, which is all V8 checks).
      const variant = real.replace("runtime: 'node'", "runtime: 'nodx'");
      expect(variant).not.toBe(real);
      expect(Buffer.byteLength(variant)).toBe(Buffer.byteLength(real));
      copyFileSync(join(DIR, 'sandbox-runner-entry.cjs'), join(dir, 'sandbox-runner-entry.cjs'));
      writeFileSync(join(dir, 'sandbox-runner.cjs'), variant);
      // A cache of the variant, made under the sandbox's V8 flags (the runner's top level is compiled eagerly).
      const make =
        `const e = require(${JSON.stringify(join(dir, 'sandbox-runner-entry.cjs'))}); const c = e.compileRunner(false); ` +
        `c.script.runInThisContext(); require('fs').writeFileSync(${JSON.stringify(join(dir, 'variant.cache'))}, ` +
        `e.cacheFileBytes(c));`;
      const made = spawnSync(process.execPath, [...v8Flags(), '-e', make], {
        env: {},
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(made.status, made.stderr).toBe(0);
      const variantCache = readFileSync(join(dir, 'variant.cache'));
      writeFileSync(join(dir, 'sandbox-runner.cjs'), real);
      const args = [...v8Flags(), join(dir, 'sandbox-runner-entry.cjs')];

      // The variant's cache as it is: its copy of the runner differs from the file, so it is not used, and a host
      // would grant the sandbox the source files rather than the cache.
      copyFileSync(join(dir, 'variant.cache'), join(dir, 'sandbox-runner.cache'));
      const honest = await handshake(args);
      expect(honest.ready.runtime).toBe('node');
      expect(honest.loaded.ok).toBe(true);
      expect(codeCacheMatches(dir)).toBe(false);

      // Control: the same V8 data behind a copy of the real runner passes the byte check, and V8 runs the stale code.
      // (The cache holds the captured built-ins, the guest core, then the runner: its copy is the last one.)
      const nl = variantCache.indexOf(10);
      const lens = variantCache.subarray(0, nl).toString('latin1').split(' ').slice(1).map(Number);
      expect(lens).toHaveLength(3);
      const [mLen, cLen, rLen] = lens as [number, number, number];
      const runnerAt = nl + 1 + mLen + cLen;
      const forged = Buffer.concat([
        variantCache.subarray(0, runnerAt),
        Buffer.from(real),
        variantCache.subarray(runnerAt + rLen),
      ]);
      writeFileSync(join(dir, 'sandbox-runner.cache'), forged);
      const stale = await handshake(args);
      expect(stale.ready.runtime).toBe('nodx');
      expect(codeCacheMatches(dir)).toBe(true);
      // Granted the entry and the cache only (as a host grants them after that check), the runner runs the cache's
      // copies.
      const granted = await handshake([
        permissionFlag(process.execPath),
        `--allow-fs-read=${join(dir, 'sandbox-runner-entry.cjs')}`,
        `--allow-fs-read=${join(dir, 'sandbox-runner.cache')}`,
        ...args,
      ]);
      expect(granted.ready.runtime).toBe('nodx');
      writeFileSync(join(dir, 'sandbox-runner.cache'), variantCache);
      const grantedVariant = await handshake([
        permissionFlag(process.execPath),
        `--allow-fs-read=${join(dir, 'sandbox-runner-entry.cjs')}`,
        `--allow-fs-read=${join(dir, 'sandbox-runner.cache')}`,
        ...args,
      ]);
      expect(grantedVariant.ready.runtime).toBe('nodx'); // the host would not have granted it (codeCacheMatches above)
    });
  });

  describe('a tool cannot write the cache (or the runner)', () => {
    const TOOL = `import fs from 'node:fs';
export default async ({ paths }) => paths.map((p) => { try { fs.writeFileSync(p, 'x'); return 'written'; } catch (e) { return e.code; } });`;
    const targets = () => [CACHE, ENTRY, join(DIR, 'sandbox-runner.cjs')];

    it('under the permission model', async () => {
      const before = targets().map((p) => readFileSync(p));
      const inst = await new NodeSandboxRuntime({ engine: 'node' }).start(spec(TOOL, 1));
      try {
        expect(await inst.call({ paths: targets() }, callOpts())).toEqual([
          'ERR_ACCESS_DENIED',
          'ERR_ACCESS_DENIED',
          'ERR_ACCESS_DENIED',
        ]);
      } finally {
        await inst.destroy('test');
      }
      expect(targets().map((p) => readFileSync(p))).toEqual(before);
    });

    it("under bubblewrap with the engine's checks off (the OS layer alone)", async () => {
      const probe = await probeUncached();
      expect(probe.available, 'bubblewrap works here').toBe(true);
      const wrapper = createBwrapWrapper({
        bwrapPath: probe.path ?? '/usr/bin/bwrap',
        ...(probe.dropTo ? { dropTo: probe.dropTo } : {}),
      });
      // The permission flags dropped: only bubblewrap's read-only binds stand between the tool and the files.
      const wrap: SpawnWrapper = (req) =>
        wrapper({ ...req, args: req.args.filter((a) => !/^--(experimental-)?permission$|^--allow-fs-/.test(a)) });
      const before = targets().map((p) => readFileSync(p));
      const rt = new NodeSandboxRuntime({ engine: 'node', wrap });
      const inst = await rt.start(spec(TOOL, 2));
      try {
        const codes = (await inst.call({ paths: targets() }, callOpts())) as string[];
        // the cache and the entry are bound read-only; sandbox-runner.cjs is not bound at all when the cache is
        // used, so under a checkout in /tmp its path may be created in the sandbox's own /tmp (a private tmpfs):
        // whatever the tool did there, the host's files are compared below
        for (const c of codes.slice(0, 2)) expect(c).toMatch(/^(EROFS|EACCES|EPERM)$/);
        expect(codes[2]).toMatch(/^(EROFS|EACCES|EPERM|ENOENT|written)$/);
      } finally {
        await inst.destroy('test');
      }
      expect(targets().map((p) => readFileSync(p))).toEqual(before);
    });
  });
});
