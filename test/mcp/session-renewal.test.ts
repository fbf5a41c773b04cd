// Every order of ok / crash / freeze / cancel / oversize over four calls (625 sequences) against real server processes:
// a session whose server timed out, crashed, sent too much or was cancelled is replaced on the next call; test side.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { McpBridge as CoreBridge } from '../../core/mcp/bridge/bridge.js';
import type { Gate } from '../../core/exec/runtime.js';
import { buildDefinition, saveDefinition } from '../../node/mcp/definitions.js';
import type { McpBridge } from '../../node/mcp/bridge.js';
import { ProcessTransport } from '../../node/mcp/process.js';
import { serveStream } from '../../node/mcp/serve.js';
import { fileDefinitionSource } from '../../node/mcp/source.js';
import { PairTransport, ROOT, tempHome } from './helpers.js';

const SCRIPT = join(ROOT, 'test/mcp/peers/scripted-server.sh');
const STEPS = ['ok', 'crash', 'freeze', 'cancel', 'oversize'] as const;
type Step = (typeof STEPS)[number];
/** The server's cap on one message here (the real transport, a smaller cap: an oversize step writes 64 KiB + 1). */
const CAP = 64 * 1024;
/** The server's call timeout: a freeze step ends after it (short enough that some 600 freezes, 32 at once, take
 * seconds; long enough that a crash or an oversize message on a loaded machine is seen before it). */
const TIMEOUT_MS = 1000;
/** Sequences run at once, each on its own client session. */
const PARALLEL = 32;

/** What a step must end with: a result from a server, or the JSON-RPC error and stable code of its fault. */
const EXPECTED: Record<Exclude<Step, 'cancel' | 'ok'>, [number, string]> = {
  crash: [-32012, 'E_MCP_CRASHED'],
  freeze: [-32011, 'E_MCP_TIMEOUT'],
  oversize: [-32015, 'E_MCP_OVERSIZE'],
};

function allSequences(n: number): Step[][] {
  let out: Step[][] = [[]];
  for (let i = 0; i < n; i++) out = out.flatMap((s) => STEPS.map((x) => [...s, x]));
  return out;
}

let home: string;
let cleanup: () => Promise<void>;
const marker = `renewal-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  ({ home, cleanup } = await tempHome());
  await saveDefinition(
    home,
    buildDefinition({
      name: 's',
      command: [SCRIPT, marker],
      folder: ROOT,
      processEnv: { PATH: '/usr/bin:/bin' },
      env: { SCRIPTED_BYTES: String(CAP + 1) },
      allow: [],
      ask: 'none',
      shared: false,
      timeoutMs: TIMEOUT_MS,
    }),
  );
});
afterAll(async () => {
  await cleanup();
});

/** Processes still running the scripted server of this run (its marker argument). */
function survivors(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(marker)) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

function makeBridge(gate?: Gate): CoreBridge {
  return new CoreBridge({
    source: fileDefinitionSource(home),
    // the command line's own transport, with a smaller message cap
    connect: async (def, ctx) =>
      new ProcessTransport({
        command: def.command as string,
        args: def.args,
        env: def.env,
        maxMessageBytes: CAP,
        ...(ctx.onFiltered ? { onFiltered: ctx.onFiltered } : {}),
      }),
    sandbox: 'renewal',
    limits: { maxSessions: 4 * PARALLEL, maxStarting: PARALLEL },
    ...(gate ? { gate } : {}),
  });
}

/** One client session on `bridge`. */
async function session(bridge: CoreBridge): Promise<{ client: Client; end: () => Promise<void> }> {
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const done = serveStream(bridge as unknown as McpBridge, toServer, fromServer);
  const client = new Client({ name: 'renewal', version: '1' }, { capabilities: {} });
  await client.connect(new PairTransport(toServer, fromServer));
  return {
    client,
    end: async () => {
      await client.close().catch(() => undefined);
      toServer.end();
      await done;
    },
  };
}

/**
 * Run one sequence; returns what went wrong (empty when every step ended as it must). An `ok` step must be answered,
 * and by a new server when the step before it ended its server (crash, freeze, oversize).
 */
async function runSequence(bridge: CoreBridge, seq: Step[]): Promise<string[]> {
  const problems: string[] = [];
  const s = await session(bridge);
  try {
    let lastPid: string | undefined;
    let serverEnded = false;
    for (const [i, step] of seq.entries()) {
      const where = `${seq.join(',')} step ${i + 1} (${step})`;
      const ac = new AbortController();
      const call = s.client.callTool({ name: 's__step', arguments: { do: step } }, undefined, {
        signal: ac.signal,
        timeout: 60_000,
      });
      if (step === 'cancel') setTimeout(() => ac.abort('the test cancels'), 30);
      try {
        const r = await call;
        const text = (r.content as { text?: string }[])[0]?.text ?? '';
        if (step !== 'ok') problems.push(`${where}: answered "${text.slice(0, 40)}"`);
        const pid = /^ok (\d+)$/.exec(text)?.[1];
        if (pid === undefined) problems.push(`${where}: not an ok answer: ${JSON.stringify(r).slice(0, 120)}`);
        else if (serverEnded && pid === lastPid) problems.push(`${where}: answered by the server that had ended`);
        lastPid = pid;
        serverEnded = false;
      } catch (e) {
        if (step === 'cancel') continue;
        const got =
          e instanceof McpError ? [e.code, (e.data as { code?: string } | undefined)?.code] : [String(e).slice(0, 80)];
        if (step === 'ok') problems.push(`${where}: failed with ${JSON.stringify(got)}: ${String(e).slice(0, 160)}`);
        else if (JSON.stringify(got) !== JSON.stringify(EXPECTED[step]))
          problems.push(`${where}: expected ${JSON.stringify(EXPECTED[step])}, got ${JSON.stringify(got)}`);
        serverEnded = true;
      }
    }
  } finally {
    await s.end();
  }
  return problems;
}

async function runAll(bridge: CoreBridge, sequences: Step[][]): Promise<string[]> {
  const problems: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < sequences.length) {
        const seq = sequences[next++] as Step[];
        problems.push(...(await runSequence(bridge, seq)));
      }
    }),
  );
  return problems;
}

/** Bounded wait (generous) for the process table to settle; never a timing assertion. */
async function settled(): Promise<number[]> {
  for (let i = 0; i < 200 && survivors().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  return survivors();
}

describe('MCP sessions renewed after every kind of end (real server processes, stdio)', () => {
  it('all 625 sequences of four calls: every ok call is answered, each fault gets its own code, no process is left', async () => {
    const sequences = allSequences(4);
    expect(sequences).toHaveLength(625);
    const bridge = makeBridge();
    let problems: string[];
    try {
      problems = await runAll(bridge, sequences);
    } finally {
      await bridge.close();
    }
    expect(problems.slice(0, 40)).toEqual([]);
    expect(await settled()).toEqual([]);
  }, 600_000);

  it('through the gate (every call approved by a gate): the same for every sequence of three calls', async () => {
    const gate: Gate = { run: async (_r, ex) => ({ value: await ex() }), authorize: async () => undefined };
    const bridge = makeBridge(gate);
    let problems: string[];
    try {
      problems = await runAll(bridge, allSequences(3));
    } finally {
      await bridge.close();
    }
    expect(problems.slice(0, 40)).toEqual([]);
    expect(await settled()).toEqual([]);
  }, 600_000);
});
