// Tests for the Node host SandboxRuntime (node/sandbox/runtime.ts + node/runner/sandbox-runner.mjs) with real node and
// deno subprocesses; trusted side.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DENO_NO_CACHE_DIR,
  NodeSandboxRuntime,
  type NodeSandboxInstance,
  resolveDeno,
  runnerFiles,
  runnerPath,
  semiSpaceMb,
  sweepStaleDenoDirs,
  type SpawnWrapper,
} from './runtime.js';
import { guestFile } from './engines.js';
import { TyError } from '../../core/errors.js';
import { canonicalParts, joinParts, PART_MIN } from '../../core/revisions/canonical.js';
import { DEFAULT_LIMITS, type CallOptions, type CapabilityHandler, type SandboxSpec } from '../../core/exec/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { FetchRequestSchema } from '../../protocol/wire.js';

let seq = 0;
function spec(source: string, limits = DEFAULT_LIMITS): SandboxSpec {
  const manifest: ToolManifest = {
    name: 'probe',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
  };
  return { revision: `brev${++seq}`, manifest, limits: { ...limits } };
}
const deny: CapabilityHandler = async (name) => {
  throw new TyError('E_CAPABILITY_DENIED', `${name} denied`);
};
function opts(onCapability: CapabilityHandler = deny, limits = DEFAULT_LIMITS): CallOptions {
  return { signal: new AbortController().signal, onCapability, limits: { ...limits } };
}
/** Live (non-zombie) direct children of this test process, from /proc. */
function childPids(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === process.pid && fields[0] !== 'Z') out.push(Number(d));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const started: NodeSandboxInstance[] = [];
afterAll(async () => {
  await Promise.all(started.map((i) => i.destroy('test end')));
});

describe('runner location', () => {
  it('finds the runner file relative to the package root', () => {
    expect(runnerPath('node')).toMatch(/node\/runner\/sandbox-runner-entry\.cjs$/);
    expect(runnerPath('deno')).toMatch(/node\/runner\/sandbox-runner\.mjs$/);
    expect(existsSync(runnerPath())).toBe(true);
  });
  it('finds the deno binary of the deno npm package', () => {
    const d = resolveDeno();
    expect(d).toBeDefined();
    expect(existsSync(d!)).toBe(true);
  });
});

describe.each(['node', 'deno'] as const)('%s engine', (engine) => {
  const logs: string[] = [];
  const rt = new NodeSandboxRuntime({ engine, onLog: (_r, level, text) => logs.push(`${level}:${text}`) });
  async function start(source: string, limits = DEFAULT_LIMITS): Promise<NodeSandboxInstance> {
    const inst = await rt.start(spec(source, limits));
    started.push(inst);
    return inst;
  }

  it('runs the default export, keeps module state between calls, returns parsed JSON', async () => {
    const inst = await start('let n = 0; export default async (args) => ({ n: ++n, echo: args })');
    expect(await inst.call({ a: [1, 'x', null] }, opts())).toEqual({ n: 1, echo: { a: [1, 'x', null] } });
    const v = (await inst.call({}, opts())) as Record<string, unknown>;
    expect(v.n).toBe(2);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    await inst.destroy('done');
    expect(inst.alive).toBe(false);
    expect(pidAlive(inst.pid)).toBe(false);
  });

  it('has an empty environment, no file system, no subprocess, no network globals', async () => {
    const inst = await start(`export default async () => {
      const out = {};
      const p = globalThis.process;
      try { out.env = JSON.stringify(typeof Deno === 'object' ? Deno.env.toObject() : p.env); } catch (e) { out.env = 'denied:' + e.name; }
      try { const fs = await import('node:fs'); fs.readFileSync('/etc/passwd'); out.fs = 'read'; } catch (e) { out.fs = 'denied'; }
      try { const cp = await import('node:child_process'); cp.execFileSync('/bin/true'); out.cp = 'ran'; } catch (e) { out.cp = 'denied'; }
      try { if (typeof Deno !== 'object') throw new Error('n/a'); new Deno.Command('/bin/true').outputSync(); out.cmd = 'ran'; } catch (e) { out.cmd = 'denied'; }
      out.globals = ['WebSocket', 'EventSource', 'XMLHttpRequest', 'WebSocketStream', 'Worker'].map((k) => typeof globalThis[k]);
      return out;
    }`);
    const v = (await inst.call({}, opts())) as Record<string, unknown>;
    expect(v.env === '{}' || String(v.env).startsWith('denied:')).toBe(true);
    expect(v.fs).toBe('denied');
    expect(v.cp).toBe('denied');
    expect(v.cmd).toBe('denied');
    expect(v.globals).toEqual(['undefined', 'undefined', 'undefined', 'undefined', 'undefined']);
  });

  it('cannot signal or reprioritize the host or other processes', async () => {
    const inst = await start(`export default async () => {
      const out = {};
      const host = typeof Deno === 'object' ? Deno.ppid : process.ppid;
      try { process.kill(host, 0); out.kill = 'sent'; } catch (e) { out.kill = 'denied'; }
      try { typeof Deno === 'object' ? Deno.kill(host, 'SIGCONT') : process._kill(host, 0); out.raw = 'sent'; } catch (e) { out.raw = 'denied'; }
      try { const os = await import('node:os'); os.setPriority(host, 10); out.prio = 'set'; } catch (e) { out.prio = 'denied'; }
      try { const { setPriority } = await import('node:os'); setPriority(host, 10); out.prioNamed = 'set'; } catch (e) { out.prioNamed = 'denied'; }
      return out;
    }`);
    expect(await inst.call({}, opts())).toEqual({ kill: 'denied', raw: 'denied', prio: 'denied', prioNamed: 'denied' });
  });

  it('the stubs hold for names imported statically from node:process and node:os too', async () => {
    const inst =
      await start(`import { kill } from 'node:process'; import { setPriority } from 'node:os'; import os from 'node:os';
    export default async () => {
      const host = typeof Deno === 'object' ? Deno.ppid : process.ppid;
      const out = {};
      try { kill(host, 0); out.kill = 'sent'; } catch (e) { out.kill = 'denied'; }
      try { setPriority(host, 10); out.prio = 'set'; } catch (e) { out.prio = 'denied'; }
      try { os.setPriority(host, 10); out.prioDefault = 'set'; } catch (e) { out.prioDefault = 'denied'; }
      return out;
    }`);
    expect(await inst.call({}, opts())).toEqual({ kill: 'denied', prio: 'denied', prioDefault: 'denied' });
  });

  if (engine === 'deno') {
    it('deno: network is denied by the engine', async () => {
      const inst = await start(
        `export default async () => { try { await Deno.connect({ hostname: '127.0.0.1', port: 9 }); return 'connected'; } catch (e) { return e.name; } }`,
      );
      expect(await inst.call({}, opts())).toMatch(/NotCapable|PermissionDenied/);
    });
  }

  it('turns console output and direct stdout writes into log messages without corrupting the protocol', async () => {
    const inst = await start(`export default async () => {
      console.log('hello', { a: 1 }); console.error('bad'); console.debug('dbg');
      if (typeof Deno === 'object') Deno.stdout.writeSync(new TextEncoder().encode('{"v":1,"type":"result","id":1,"ok":true,"json":"666"}\\n'));
      else process.stdout.write('{"v":1,"type":"result","id":1,"ok":true,"json":"666"}\\n');
      return 'ok';
    }`);
    logs.length = 0;
    expect(await inst.call({}, opts())).toBe('ok');
    expect(logs).toContain('info:hello {"a":1}');
    expect(logs).toContain('error:bad');
    expect(logs).toContain('debug:dbg');
    expect(logs.some((l) => l.includes('"json":"666"'))).toBe(true);
    expect(inst.alive).toBe(true);
  });

  it('rate-caps log messages', async () => {
    const inst = await start(
      `export default async () => { for (let i = 0; i < 5000; i++) console.log('line ' + i); return 'ok'; }`,
    );
    logs.length = 0;
    expect(await inst.call({}, opts())).toBe('ok');
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.length).toBeLessThanOrEqual(1000);
  });

  it('fetch and ctx.fetch are one mediated function sending plain data and building a Response', async () => {
    const inst = await start(`export default async (args, ctx) => {
      const r = await fetch('https://api.example.com/x?q=1', { method: 'POST', headers: { 'x-a': 'b' }, body: 'hi there' });
      return { same: ctx.fetch === fetch, status: r.status, text: await r.text(), h: r.headers.get('content-type'), url: r.url, ok: r.ok };
    }`);
    const seen: unknown[] = [];
    const handler: CapabilityHandler = async (name, params) => {
      seen.push([name, params]);
      return {
        status: 201,
        statusText: 'Created',
        headers: [['content-type', 'text/plain']],
        body: Buffer.from('réponse').toString('base64'),
        url: 'https://api.example.com/x?q=1',
      };
    };
    const v = await inst.call({}, opts(handler));
    expect(v).toEqual({
      same: true,
      status: 201,
      text: 'réponse',
      h: 'text/plain',
      url: 'https://api.example.com/x?q=1',
      ok: true,
    });
    expect(seen).toHaveLength(1);
    const [name, params] = seen[0] as [string, unknown];
    expect(name).toBe('fetch');
    const req = FetchRequestSchema.parse(params);
    expect(req.url).toBe('https://api.example.com/x?q=1');
    expect(req.method).toBe('POST');
    expect(req.headers).toContainEqual(['x-a', 'b']);
    expect(Buffer.from(req.body!, 'base64').toString()).toBe('hi there');
  });

  it('a large capability reply (8 MiB body) arrives whole', async () => {
    const inst = await start(
      `export default async () => { const r = await fetch('https://big.example/'); const b = new Uint8Array(await ` +
        `r.arrayBuffer()); let sum = 0; for (const x of b) sum = (sum + x) % 65521; return { n: b.length, ` +
        `sum }; }`,
    );
    const body = Buffer.alloc(8 * 1024 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = (i * 31) & 0xff;
    let sum = 0;
    for (const x of body) sum = (sum + x) % 65521;
    const v = await inst.call(
      {},
      opts(async () => ({
        status: 200,
        statusText: 'OK',
        headers: [],
        body: body.toString('base64'),
        url: 'https://big.example/',
      })),
    );
    expect(v).toEqual({ n: body.length, sum });
  });

  it('arguments holding long strings go out in canonical pieces (one writev) and arrive exactly, message after message', async () => {
    const inst = await start(
      `export default async (a) => { const out = {}; for (const k of Object.keys(a)) { const s = a[k]; ` +
        `let h = 0; for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) >>> ` +
        `0; out[k] = [s.length, h]; } return { keys: Object.keys(a), out }; }`,
    );
    const hash = (s: string) => {
      let h = 0;
      for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) >>> 0;
      return h;
    };
    const mib = 1024 * 1024;
    const args: Record<string, string> = {
      z: 'y'.repeat(mib),
      a: 'é'.repeat(PART_MIN * 3),
      m: '中😀'.repeat(PART_MIN),
      e: 'line "quoted"\n'.repeat(PART_MIN),
      s: 'short',
    };
    const parts = canonicalParts(args, 'E_INVALID_ARGS');
    expect(parts.length).toBeGreaterThanOrEqual(7); // three long verbatim strings, each its own piece
    const want = {
      keys: Object.keys(args).sort(),
      out: Object.fromEntries(Object.entries(args).map(([k, v]) => [k, [v.length, hash(v)]])),
    };
    for (let i = 0; i < 3; i++)
      expect(await inst.call(args, { ...opts(), argsJson: joinParts(parts), argsParts: parts })).toEqual(want);
    expect(await inst.call({ s: 'after' }, opts())).toEqual({ keys: ['s'], out: { s: [5, hash('after')] } });
  });

  it('every ctx capability is a cap request; denials are Errors with a code and no host path or stack frames', async () => {
    const inst = await start(`export default async (args, ctx) => {
      const out = [];
      const tries = [
        () => ctx.storage.get('k'), () => ctx.storage.set('k', { v: 1 }), () => ctx.storage.delete('k'), () => ctx.storage.list(),
        () => ctx.getSecret('TOKEN'), () => ctx.resolveInvocation('other'), () => ctx.createSubtasksResult([{ a: 1 }]), () => fetch('https://x.example/'),
      ];
      for (const t of tries) { try { await t(); out.push('resolved'); } catch (e) { out.push({ isError: e instanceof Error, code: e.code, message: e.message, stack: e.stack }); } }
      return { out, signal: ctx.signal instanceof AbortSignal && !ctx.signal.aborted };
    }`);
    const names: string[] = [];
    const v = (await inst.call(
      {},
      opts(async (name) => {
        names.push(name);
        throw new TyError('E_CAPABILITY_DENIED', `${name} denied`);
      }),
    )) as { out: { isError: boolean; code: string; message: string; stack: string }[]; signal: boolean };
    expect(names).toEqual([
      'storage.get',
      'storage.set',
      'storage.delete',
      'storage.list',
      'getSecret',
      'resolveInvocation',
      'createSubtasksResult',
      'fetch',
    ]);
    expect(v.signal).toBe(true);
    for (const e of v.out) {
      expect(e.isError).toBe(true);
      expect(e.code).toBe('E_CAPABILITY_DENIED');
      expect(e.stack).not.toMatch(/\n\s+at |\/|file:/);
    }
  });

  it('ctx.signal fires when the call ends', async () => {
    const inst = await start(
      `let s; export default async (args, ctx) => { if (args === 'check') return s.aborted; s = ctx.signal; return s.aborted; }`,
    );
    expect(await inst.call('first', opts())).toBe(false);
    expect(await inst.call('check', opts())).toBe(true);
  });

  it('a module that fails to load is E_TOOL_FAILED and no process is left', async () => {
    await expect(rt.start(spec('export default async ( => 1'))).rejects.toMatchObject({ code: 'E_TOOL_FAILED' });
    await expect(rt.start(spec('export const x = 1'))).rejects.toMatchObject({
      code: 'E_TOOL_FAILED',
      message: expect.stringContaining('default export'),
    });
    await expect(rt.start(spec('throw new Error("at load")'))).rejects.toMatchObject({
      code: 'E_TOOL_FAILED',
      message: 'Error: at load',
    });
  });

  it('a sandbox that exits is E_SANDBOX_FAILED with a clear message', async () => {
    const inst = await start(`export default async () => { (typeof Deno === 'object' ? Deno : process).exit(3); }`);
    await expect(inst.call({}, opts())).rejects.toMatchObject({
      code: 'E_SANDBOX_FAILED',
      message: expect.stringContaining('exited with code 3'),
    });
    expect(inst.alive).toBe(false);
    await expect(inst.call({}, opts())).rejects.toMatchObject({ code: 'E_SANDBOX_FAILED' });
  });

  it('process.exit or reallyExit after an await ends the sandbox with that code, not at the time limit', async () => {
    for (const how of ['exit', 'reallyExit']) {
      const inst = await start(`export default async () => {
        await new Promise((r) => setTimeout(r, 20));
        if (typeof Deno === 'object') Deno.exit(5);
        Object.defineProperty(process, 'pid', { value: 1 }); // the runner signals only itself, whatever pid says
        process.${how}(5);
      }`);
      // a hang would end as E_TIMEOUT at this generous limit instead
      const err = await inst.call({}, opts(deny, { ...DEFAULT_LIMITS, timeoutMs: 60_000 })).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'E_SANDBOX_FAILED', message: expect.stringContaining('exited with code 5') });
      expect(inst.alive).toBe(false);
    }
  });

  it('unhandled rejections in tool code are logged, not fatal', async () => {
    const inst = await start(
      `export default async () => { Promise.reject(new Error('stray')); await new Promise((r) => setTimeout(r, 20)); return 'alive'; }`,
    );
    logs.length = 0;
    expect(await inst.call({}, opts())).toBe('alive');
    expect(logs.some((l) => l.includes('stray'))).toBe(true);
  });

  it('passes the command through the SpawnWrapper with an empty environment and the runner files as the only project paths', async () => {
    const seen: Parameters<SpawnWrapper>[0][] = [];
    const wrap: SpawnWrapper = (s) => {
      seen.push(s);
      return { command: '/usr/bin/env', args: [s.command, ...s.args], env: s.env };
    };
    const wrapped = new NodeSandboxRuntime({ engine, wrap });
    const inst = await wrapped.start(spec('export default async () => 7'));
    started.push(inst);
    expect(await inst.call({}, opts())).toBe(7);
    expect(seen).toHaveLength(1);
    const s = seen[0]!;
    const dir = dirname(runnerPath(engine));
    // Node: the entry and the build's code cache (holding the captured built-ins, the guest core and the runner), else
    // the entry and those three files; Deno: the runner, the captured built-ins and the guest core
    const expected =
      engine === 'deno'
        ? [runnerPath(engine), guestFile(dir, 'commons.mjs'), guestFile(dir, 'core.mjs')]
        : existsSync(join(dir, 'sandbox-runner.cache'))
          ? [runnerPath(engine), join(dir, 'sandbox-runner.cache')]
          : [
              runnerPath(engine),
              guestFile(dir, 'commons.mjs'),
              guestFile(dir, 'core.mjs'),
              join(dir, 'sandbox-runner.cjs'),
            ];
    expect(runnerFiles(engine)).toEqual(expected);
    // the engine binary and the runner files, nothing else
    expect(s.readOnlyPaths).toEqual([s.command, ...runnerFiles(engine)]);
    if (engine === 'node') {
      expect(s.env).toEqual({});
      expect(s.args.filter((a) => a.startsWith('--allow-fs-read='))).toEqual(
        runnerFiles(engine).map((f) => `--allow-fs-read=${f}`),
      );
      expect(s.args.some((a) => a === '--permission' || a === '--experimental-permission')).toBe(true);
      expect(s.args.some((a) => /^--allow-(child-process|worker|addons|wasi)/.test(a))).toBe(false);
      expect(s.args).toContain('--max-semi-space-size=1'); // 1 MiB at the default 256 MiB heap
      expect(s.args).toContain('--v8-pool-size=1');
      expect([semiSpaceMb(16), semiSpaceMb(256), semiSpaceMb(2048), semiSpaceMb(8192)]).toEqual([1, 1, 8, 16]);
      expect(s.args).toContain(`--max-old-space-size=${DEFAULT_LIMITS.memoryMb}`);
    } else {
      expect(Object.keys(s.env).sort()).toEqual(['DENO_DIR', 'DENO_NO_UPDATE_CHECK', 'NO_COLOR']);
      expect(s.args.some((a) => a.startsWith('--allow-'))).toBe(false);
      expect(s.args).toContain('--no-prompt');
      expect(s.args).toContain(`--v8-flags=--max-old-space-size=${DEFAULT_LIMITS.memoryMb},--max-semi-space-size=1`);
      // No writable folder at all: DENO_DIR is a path no one can create, so Deno keeps its caches in memory.
      expect(s.env.DENO_DIR).toBe(DENO_NO_CACHE_DIR);
      expect(s.writablePaths).toEqual([]);
    }
  });

  it('folder grants: read-only folders are readable not writable, write folders writable, nothing else', async () => {
    const base = mkdtempSync(join(tmpdir(), 'tysandbox-folders-'));
    try {
      const ro = join(base, 'ro');
      const rw = join(base, 'rw');
      const other = join(base, 'other');
      for (const d of [ro, rw, other]) {
        mkdirSync(d);
        writeFileSync(join(d, 'f.txt'), d);
      }
      const source = `export default async ({ ro, rw, other }) => {
        const fs = await import('node:fs');
        const t = (f) => { try { f(); return 'ok'; } catch { return 'denied'; } };
        return {
          readRo: t(() => fs.readFileSync(ro + '/f.txt')), writeRo: t(() => fs.writeFileSync(ro + '/n.txt', 'x')),
          readRw: t(() => fs.readFileSync(rw + '/f.txt')), writeRw: t(() => fs.writeFileSync(rw + '/n.txt', 'x')),
          readOther: t(() => fs.readFileSync(other + '/f.txt')),
        };
      }`;
      const inst = await rt.start({
        ...spec(source),
        folders: [
          { path: ro, access: 'read' },
          { path: rw, access: 'write' },
        ],
      });
      started.push(inst);
      expect(await inst.call({ ro, rw, other }, opts())).toEqual({
        readRo: 'ok',
        writeRo: 'denied',
        readRw: 'ok',
        writeRw: 'ok',
        readOther: 'denied',
      });
      // a comma would split the engine's flag into two grants: refused before anything starts
      await expect(
        rt.start({ ...spec('export default async () => 1'), folders: [{ path: `${ro},/etc`, access: 'read' }] }),
      ).rejects.toMatchObject({ code: 'E_USAGE' });
      await expect(
        rt.start({ ...spec('export default async () => 1'), folders: [{ path: 'relative/dir', access: 'read' }] }),
      ).rejects.toMatchObject({ code: 'E_USAGE' });
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('a module whose top level never finishes is E_TIMEOUT at the start budget and leaves no process', async () => {
    const before = childPids();
    const slow = new NodeSandboxRuntime({ engine, startTimeoutMs: 1500 });
    await expect(slow.start(spec('while (true) {} export default async () => 1'))).rejects.toMatchObject({
      code: 'E_TIMEOUT',
    });
    const leftover = childPids().filter((p) => !before.includes(p));
    expect(leftover).toEqual([]);
  });

  it('a missing engine binary is E_SANDBOX_UNAVAILABLE', async () => {
    const missing = new NodeSandboxRuntime(
      engine === 'node' ? { engine, nodePath: '/nonexistent/node' } : { engine, denoPath: '/nonexistent/deno' },
    );
    await expect(missing.start(spec('export default async () => 1'))).rejects.toMatchObject({
      code: 'E_SANDBOX_UNAVAILABLE',
    });
  });

  it('destroy kills the whole process group and is idempotent', async () => {
    const inst = await start('export default async () => 1');
    expect(pidAlive(inst.pid)).toBe(true);
    await inst.destroy('x');
    await inst.destroy('again');
    expect(pidAlive(inst.pid)).toBe(false);
  });
});

describe('host exit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tysandbox-host-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** A separate host process that starts one sandbox, prints its pid, then `mode`s. */
  async function hostWith(
    mode: 'exit' | 'hang',
    engine: 'node' | 'deno',
  ): Promise<{ sandboxPid: number; host: ReturnType<typeof spawn> }> {
    const file = join(dir, `host-${mode}-${engine}.mts`);
    const sandboxTs = fileURLToPath(new URL('./runtime.ts', import.meta.url));
    writeFileSync(
      file,
      `import { NodeSandboxRuntime } from ${JSON.stringify(sandboxTs)};
const rt = new NodeSandboxRuntime({ engine: ${JSON.stringify(engine)} });
const inst = await rt.start({ revision: 'bhost', manifest: {
  name: 't', description: '', parameters: {}, execution: {
  kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 1' } }, limits: { timeoutMs: 60000, outputBytes: 1000, memoryMb: 64 } });
process.stdout.write(inst.pid + '\\n');
${mode === 'exit' ? 'process.exit(0);' : 'setInterval(() => {}, 1000);'}
`,
    );
    const host = spawn(process.execPath, ['--import', 'tsx', file], {
      stdio: ['ignore', 'pipe', 'inherit'],
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
    });
    const line = await new Promise<string>((resolve, reject) => {
      let buf = '';
      host.stdout!.on('data', (c: Buffer) => {
        buf += c.toString();
        if (buf.includes('\n')) resolve(buf.trim());
      });
      host.once('exit', () =>
        buf.includes('\n') ? resolve(buf.trim()) : reject(new Error('host exited without a pid')),
      );
    });
    return { sandboxPid: Number(line), host };
  }
  async function waitGone(pid: number): Promise<boolean> {
    for (let i = 0; i < 200; i++) {
      if (!pidAlive(pid)) return true;
      await new Promise((r) => setTimeout(r, 25));
    }
    return false;
  }

  it('kills every sandbox process group when the host exits', async () => {
    const { sandboxPid, host } = await hostWith('exit', 'node');
    expect(sandboxPid).toBeGreaterThan(0);
    await new Promise((r) => (host.exitCode !== null ? r(null) : host.once('exit', r)));
    expect(await waitGone(sandboxPid)).toBe(true);
  });

  it.each(['node', 'deno'] as const)(
    'an idle %s sandbox exits by itself when its host is SIGKILLed (stdin EOF)',
    async (engine) => {
      const { sandboxPid, host } = await hostWith('hang', engine);
      expect(pidAlive(sandboxPid)).toBe(true);
      host.kill('SIGKILL');
      expect(await waitGone(sandboxPid)).toBe(true);
      if (engine === 'deno') {
        // a Deno sandbox writes no DENO_DIR, so a dead host leaves none behind
        expect(readdirSync(tmpdir()).filter((n) => n.startsWith(`tysandbox-deno-${host.pid}-`))).toEqual([]);
      }
    },
  );
});

describe.each(['node', 'deno'] as const)('%s engine under bwrap with an OS CPU limit', (engine) => {
  it('a busy loop killed by RLIMIT_CPU (SIGXCPU) is E_TIMEOUT "CPU time limit reached", not a bare exit status', async (ctx) => {
    const { probeUncached } = await import('../os-sandbox/probe.js');
    const { createBwrapWrapper } = await import('../os-sandbox/bwrap.js');
    const { osLimitsFor } = await import('../os-sandbox/limits.js');
    const probe = await probeUncached();
    if (!probe.available || !probe.path || !probe.prlimit)
      return ctx.skip(`bubblewrap or prlimit unusable here: ${probe.reason ?? 'no prlimit'}`);
    const wrap = createBwrapWrapper({
      bwrapPath: probe.path,
      prlimitPath: probe.prlimit,
      limits: osLimitsFor({ memoryMb: 128, timeoutMs: 1000 }, { cpuSeconds: 1 }),
      ...(probe.dropTo ? { dropTo: probe.dropTo } : {}),
    });
    const rt = new NodeSandboxRuntime({ engine, wrap });
    const inst = await rt.start(spec('export default async () => { for (;;) {} }'));
    started.push(inst);
    // The wall-clock limit is far away: only the CPU limit can end this call.
    const err = await inst.call({}, opts(deny, { ...DEFAULT_LIMITS, timeoutMs: 120_000 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TyError);
    expect((err as TyError).code).toBe('E_TIMEOUT');
    expect((err as TyError).message).toMatch(/^CPU time limit reached/);
    expect(inst.alive).toBe(false);
  });
});

describe('temporary DENO_DIRs of earlier versions', () => {
  it("sweepStaleDenoDirs removes those whose host is gone and keeps a live host's", () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    const stale = mkdtempSync(join(tmpdir(), `tysandbox-deno-${dead}-`));
    const live = mkdtempSync(join(tmpdir(), `tysandbox-deno-${process.ppid}-`));
    try {
      expect(sweepStaleDenoDirs()).toBeGreaterThanOrEqual(1);
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(live)).toBe(true);
    } finally {
      rmSync(stale, { recursive: true, force: true });
      rmSync(live, { recursive: true, force: true });
    }
  });
});
