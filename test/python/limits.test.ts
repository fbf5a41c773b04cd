// Python limits named right, on the command line: a time limit says whether Pyodide was starting, the module's
// top-level code or main() ran; Pyodide's memory and in-memory files are capped by limits.memoryMb and reported as
// E_MEMORY_LIMIT; real Node and Deno sandboxes under bubblewrap; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliContractHost } from '../../node/diagnostics/cli-host.js';
import { NodeSandboxRuntime, packageRoot } from '../../node/sandbox/runtime.js';
import { SandboxPool } from '../../core/exec/pool.js';
import { DEFAULT_LIMITS, type SandboxSpec } from '../../core/exec/runtime.js';
import { revisionId } from '../../core/revisions/registry.js';
import { TyError } from '../../core/errors.js';
import { oneLine, runProcess } from '../e2e/helpers.js';
import { limitsManifest } from './limits-tool.js';

let host: CliContractHost;
let tmp: string;
beforeAll(async () => {
  // posture required: if bubblewrap stopped working these tests fail instead of passing unsandboxed
  host = await CliContractHost.create({ posture: 'required' });
  tmp = mkdtempSync(join(tmpdir(), 'tysandbox-pylimits-'));
  chmodSync(tmp, 0o755);
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const onCapability = async () => {
  throw new TyError('E_CAPABILITY_DENIED', 'none');
};
const failure = (p: Promise<unknown>) =>
  p.then(
    (v) => ({ ok: true, value: v }),
    (e: TyError) => ({ ok: false, code: e.code, message: e.message, data: e.data }),
  );

describe.each(['node', 'deno'] as const)('Python limits on the %s sandbox under bubblewrap', (engine) => {
  let pool: SandboxPool;
  let spec: (timeoutMs: number) => SandboxSpec;
  beforeAll(async () => {
    const manifest = limitsManifest('pylimits', engine);
    const revision = await revisionId(manifest);
    spec = (timeoutMs) => ({ revision, manifest, limits: { ...DEFAULT_LIMITS, memoryMb: 128, timeoutMs } });
    // one runtime: a retained sandbox serves calls of any time limit
    pool = new SandboxPool({ runtime: new NodeSandboxRuntime({ engine, wrap: host.plan.wrap! }) });
  });
  afterAll(() => pool.shutdown());
  const call = (args: unknown, timeoutMs = 120_000) => failure(pool.call(spec(timeoutMs), args, { onCapability }));

  it('E_TIMEOUT names what ran: main(), the module top-level code, or the Python runtime starting', async () => {
    expect(await call({})).toEqual({ ok: true, value: { runs: 1 } });
    // main() loops: the sandbox is warm, so the whole limit goes to the call
    expect(await call({ loop: true }, 2000)).toMatchObject({
      ok: false,
      code: 'E_TIMEOUT',
      message: 'tool call exceeded 2000 ms while main() ran; sandbox destroyed',
      data: { phase: 'main', runtime: 'python', limitMs: 2000 },
    });
    // a fresh sandbox: its module's run after `arm` never ends
    expect(await call({ arm: true })).toEqual({ ok: true, value: { runs: 1 } });
    expect(await call({}, 2000)).toMatchObject({
      ok: false,
      code: 'E_TIMEOUT',
      message: "tool call exceeded 2000 ms while its module's top-level code ran; sandbox destroyed",
      data: { phase: 'module' },
    });
    // a limit shorter than Pyodide's start: none of the tool's code ran
    expect(await call({ loop: true }, 300)).toMatchObject({
      ok: false,
      code: 'E_TIMEOUT',
      message: expect.stringContaining('while the Python runtime (Pyodide) started, before any of the tool'),
      data: { phase: 'start' },
    });
  }, 400_000);

  it('a bytearray memory bomb is E_MEMORY_LIMIT at limits.memoryMb, and the next call gets a fresh sandbox', async () => {
    const r = await call({ bomb: true });
    expect(r).toMatchObject({
      ok: false,
      code: 'E_MEMORY_LIMIT',
      message: expect.stringMatching(/^Python reached the sandbox's memory limit .*: MemoryError$/),
    });
    expect(await call({})).toEqual({ ok: true, value: { runs: 1 } });
    // a tool that catches its MemoryError goes on: the limit refuses the growth, not the call
    expect(await call({ catch: true })).toEqual({ ok: true, value: { caught: 'MemoryError' } });
  }, 400_000);

  it('files written to /tmp count against the same limit: ENOSPC to the tool, E_MEMORY_LIMIT to the host, never a fatal Pyodide', async () => {
    // a fresh sandbox (the bomb above left Pyodide's heap at the limit: a WebAssembly memory never shrinks)
    await pool.terminate(spec(0).revision);
    // under the limit: 4 files of 8 MiB, then /tmp is emptied for the next call
    expect(await call({ fill: 4 })).toEqual({ ok: true, value: { files: 4 } });
    expect(await call({ fill: 4 })).toEqual({ ok: true, value: { files: 4 } });
    const r = await call({ fill: true });
    expect(r).toMatchObject({
      ok: false,
      code: 'E_MEMORY_LIMIT',
      message: expect.stringContaining('OSError: [Errno 51] No space left on device'),
    });
    expect(JSON.stringify(r)).not.toContain('fatally');
    expect(await call({ fill: 2 })).toEqual({ ok: true, value: { files: 2 } });
  }, 400_000);
});

describe('tycli run, with the messages the command line shows', () => {
  const BIN = join(packageRoot(), 'bin', 'tycli.mjs');
  const tycli = (args: string[]) =>
    runProcess(
      process.execPath,
      [BIN, ...args],
      { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp },
      tmp,
      240_000,
    );
  it('a memory bomb is E_MEMORY_LIMIT naming limits.memoryMb; a time limit inside the start names the Python runtime', async () => {
    const home = join(tmp, 'home');
    const file = join(tmp, 'pylimits.json');
    writeFileSync(file, JSON.stringify(limitsManifest()));
    expect(oneLine(await tycli(['--home', home, '--json', 'tool', 'add', file]))).toMatchObject({ ok: true });
    const bomb = await tycli([
      '--home',
      home,
      '--json',
      '--sandbox',
      'required',
      'run',
      'pylimits',
      '--args',
      '{"bomb":true}',
    ]);
    expect(oneLine(bomb)).toMatchObject({
      ok: false,
      error: {
        code: 'E_MEMORY_LIMIT',
        message: expect.stringMatching(/MemoryError; the limit is the manifest's limits\.memoryMb \(now 128 MiB/),
      },
    });
    const late = await tycli(['--home', home, '--sandbox', 'required', 'run', 'pylimits', '--timeout', '300']);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(
      "error[E_TIMEOUT]: tool call exceeded 300 ms while the Python runtime (Pyodide) started, before any of the tool's code ran",
    );
  }, 400_000);
});
