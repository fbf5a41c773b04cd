// Tests of the runners' stdin handling (node: thread-pool reads, then the stdin stream after 16 reads; deno:
// Deno.stdin.read) with real subprocesses; trusted side.
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { NodeSandboxRuntime, resolveDeno, type NodeSandboxInstance } from '../sandbox/runtime.js';
import { TyError } from '../../core/errors.js';
import { DEFAULT_LIMITS, type CallOptions, type CapabilityHandler, type SandboxSpec } from '../../core/exec/runtime.js';

const SOURCE = `export default async (args, ctx) => {
  const stored = args.cap ? await ctx.storage.get('k') : undefined;
  return { echo: args, stored, bytes: new TextEncoder().encode(JSON.stringify(args)).length };
}`;
let seq = 0;
function spec(): SandboxSpec {
  return {
    revision: `brunner${++seq}`,
    manifest: {
      name: 'r',
      description: '',
      parameters: {},
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: SOURCE },
    },
    limits: { ...DEFAULT_LIMITS },
  };
}
const capLog: string[] = [];
const onCapability: CapabilityHandler = async (name, params) => {
  capLog.push(name);
  if (name === 'storage.get') return { key: (params as { key: string }).key, value: 'v-€😀' };
  throw new TyError('E_CAPABILITY_DENIED', 'no');
};
const opts = (): CallOptions => ({ signal: new AbortController().signal, onCapability, limits: { ...DEFAULT_LIMITS } });

const started: NodeSandboxInstance[] = [];
afterAll(async () => {
  await Promise.all(started.map((i) => i.destroy('test end')));
});

const engines: ('node' | 'deno')[] = ['node', ...(resolveDeno() ? (['deno'] as const) : [])];

describe.each(engines)('%s runner input', (engine) => {
  it('keeps every message intact before and after the input switch: multi-byte text, 600 KiB arguments, capability replies', async () => {
    const inst = await new NodeSandboxRuntime({ engine }).start(spec());
    started.push(inst);
    // 40 calls cross the node runner's switch (after 16 reads); each mixes 1-, 2-, 3- and 4-byte UTF-8.
    for (let i = 0; i < 40; i++) {
      const args = { i, s: `a-é-€-😀-${i}`, cap: i % 7 === 0 };
      const r = (await inst.call(args, opts())) as { echo: unknown; stored: unknown };
      expect(r.echo).toEqual(args);
      expect(r.stored).toEqual(args.cap ? { key: 'k', value: 'v-€😀' } : undefined);
    }
    // Larger than the 256 KiB read buffer: arrives in several reads; multi-byte sequences get split between them.
    for (const fill of ['x', '€', '😀']) {
      const big = fill.repeat(Math.ceil((600 * 1024) / Buffer.byteLength(fill)));
      const r = (await inst.call({ big, cap: true }, opts())) as {
        echo: { big: string };
        stored: unknown;
        bytes: number;
      };
      expect(r.echo.big).toBe(big);
      expect(r.stored).toEqual({ key: 'k', value: 'v-€😀' });
      expect(r.bytes).toBe(Buffer.byteLength(JSON.stringify({ big, cap: true })));
    }
    expect(capLog.filter((n) => n === 'storage.get').length).toBeGreaterThanOrEqual(9);
  });

  it('exits by itself when its input ends, also after the input switch', async () => {
    // Driven at the protocol level, so the test owns stdin.
    const cmd = new NodeSandboxRuntime({ engine }).command(spec());
    const child = spawn(cmd.command, cmd.args, { env: cmd.env, stdio: ['pipe', 'pipe', 'ignore'], detached: true });
    try {
      const lines: string[] = [];
      let buf = '';
      let wake: (() => void) | undefined;
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d: string) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          lines.push(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
        wake?.();
      });
      const until = async (n: number) => {
        while (lines.length < n) await new Promise<void>((r) => (wake = r));
      };
      await until(1);
      expect(JSON.parse(lines[0] as string)).toMatchObject({ type: 'ready' });
      child.stdin.write(JSON.stringify({ v: 1, type: 'load', runtime: 'javascript', source: SOURCE }) + '\n');
      await until(2);
      expect(JSON.parse(lines[1] as string)).toMatchObject({ type: 'loaded', ok: true });
      for (let i = 0; i < 24; i++) {
        child.stdin.write(JSON.stringify({ v: 1, type: 'call', id: i + 1, args: { i } }) + '\n');
        await until(3 + i);
        expect(JSON.parse(lines[2 + i] as string)).toMatchObject({ type: 'result', id: i + 1, ok: true });
      }
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.stdin.end();
      expect(await exited).toBe(0);
    } finally {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  });
});
