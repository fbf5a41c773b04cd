// The official MCP conformance suite (@modelcontextprotocol/conformance, on Node 22) against `tycli mcp proxy --http` in front of an SDK fixture server; test side.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFORMANCE_DIR as DIR, NODE22, ROOT, addNodeServer, ensureConformanceFolder, startHttpProxy, tempHome } from './mcp-helpers.js';
// @ts-expect-error: a plain ESM test harness without types
import { authShim } from './conformance/auth-shim.mjs';

const SUITE = join(DIR, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

let home: string;
let cleanup: () => Promise<void>;
let proxy: ChildProcess | undefined;
beforeAll(async () => {
  // the suite and Node 22 live in their own folder (see test/conformance/package.json); .ci/run installs
  // them, and a checkout without them gets them here from the lockfile
  ensureConformanceFolder();
  ({ home, cleanup } = await tempHome());
}, 600_000);
afterAll(async () => {
  if (proxy && proxy.exitCode === null) {
    const gone = new Promise((r) => proxy!.once('exit', r));
    proxy.kill('SIGTERM');
    await gone;
  }
  await cleanup();
});

describe('the MCP conformance suite against tycli mcp proxy', () => {
  it('passes every server scenario except those that need the client to receive sampling or elicitation requests', async () => {
    expect(spawnSync(NODE22, ['--version'], { encoding: 'utf8' }).stdout.trim()).toMatch(/^v2[2-9]\./);
    // the fixture implements the suite's scenarios; --ask none lets its calls through the gate (audited)
    await addNodeServer(home, 'conf', join(ROOT, 'test/mcp-sdk-fixture.mjs'), [], { ask: 'none' });
    const p = await startHttpProxy(home, 'conf');
    proxy = p.proc;
    // the suite cannot send a bearer token: a loopback forwarder adds it, as a configured client would
    const shim = (await authShim(p.url, p.token)) as { url: string; close(): Promise<void> };
    const out = await mkdtemp(join(tmpdir(), 'tymcp-conformance-'));
    try {
      const run = spawn(NODE22, [SUITE, 'server', '--url', shim.url, '--expected-failures', join(DIR, 'expected-failures.yml'), '-o', out], { cwd: out, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      run.stdout!.on('data', (c) => (text += String(c)));
      run.stderr!.on('data', (c) => (text += String(c)));
      const code = await new Promise<number | null>((r) => run.once('exit', r));
      const summary = text.slice(text.indexOf('=== SUMMARY ==='));
      // exit 0: every scenario passed except the baseline's, and each baseline entry really failed
      expect(code, summary).toBe(0);
      const failed = [...summary.matchAll(/^✗ ([a-z0-9-]+):/gm)].map((m) => m[1]).sort();
      expect(failed).toEqual(['elicitation-sep1034-defaults', 'elicitation-sep1330-enums', 'tools-call-elicitation', 'tools-call-sampling']);
      expect(summary).toMatch(/✓ dns-rebinding-protection: 2 passed, 0 failed/);
      expect([...summary.matchAll(/^✓ /gm)].length).toBeGreaterThanOrEqual(25);
    } finally {
      await shim.close();
      await rm(out, { recursive: true, force: true });
    }
  }, 300_000);
});
