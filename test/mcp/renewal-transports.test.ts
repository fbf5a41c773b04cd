// Over `mcp serve`'s stdio and `mcp serve --http` listeners: a cancelled, crashed or hung server call in every order,
// each followed by a call that a live (and, after a crash or hang, new) server answers; test side.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { buildDefinition, saveDefinition } from '../../node/mcp/definitions.js';
import { ROOT, groupAlive, openVia, tempHome } from './helpers.js';

const SCRIPT = join(ROOT, 'test/mcp/peers/scripted-server.sh');
type Fault = 'cancel' | 'crash' | 'hang';
const ORDERS: Fault[][] = [
  ['cancel', 'crash', 'hang'],
  ['cancel', 'hang', 'crash'],
  ['crash', 'cancel', 'hang'],
  ['crash', 'hang', 'cancel'],
  ['hang', 'cancel', 'crash'],
  ['hang', 'crash', 'cancel'],
];

let home: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await saveDefinition(
    home,
    buildDefinition({
      name: 's',
      command: [SCRIPT],
      folder: ROOT,
      processEnv: { PATH: '/usr/bin:/bin' },
      env: {},
      allow: [],
      ask: 'none',
      shared: false,
      timeoutMs: 1500,
    }),
  );
});
afterEach(async () => {
  await cleanup();
});

describe.each(['stdio', 'http'] as const)('renewal over %s', (via) => {
  it.each(ORDERS.map((o) => [o.join(', '), o] as const))(
    'ok, then %s, each followed by an answered call',
    async (_name, order) => {
      const conn = await openVia(via, { home, sandbox: 'r' });
      const pids: number[] = [];
      try {
        const ok = async (): Promise<number> => {
          const r = await conn.client.callTool({ name: 's__step', arguments: { do: 'ok' } });
          const pid = Number(/^ok (\d+)$/.exec((r.content as { text: string }[])[0]!.text)?.[1]);
          pids.push(pid);
          return pid;
        };
        let pid = await ok();
        for (const f of order) {
          const ac = new AbortController();
          const call = conn.client.callTool(
            { name: 's__step', arguments: { do: f === 'hang' ? 'freeze' : f } },
            undefined,
            { signal: ac.signal, timeout: 60_000 },
          );
          if (f === 'cancel') setTimeout(() => ac.abort('cancelled by the test'), 100);
          const e = await call.then(
            () => undefined,
            (x: unknown) => x,
          );
          if (f === 'cancel') expect(e).toBeDefined();
          else {
            expect(e).toBeInstanceOf(McpError);
            const m = e as McpError;
            expect([m.code, (m.data as { code?: string }).code]).toEqual(
              f === 'crash' ? [-32012, 'E_MCP_CRASHED'] : [-32011, 'E_MCP_TIMEOUT'],
            );
          }
          const next = await ok();
          // a cancelled call leaves its session as it was; a crash or a hang ends it and a new server answers
          if (f === 'cancel') expect(next).toBe(pid);
          else expect(next).not.toBe(pid);
          pid = next;
        }
      } finally {
        await conn.close();
      }
      // every server this run started has gone (bounded wait, no timing asserted)
      for (let i = 0; i < 200 && pids.some(groupAlive); i++) await new Promise((r) => setTimeout(r, 25));
      expect(pids.filter(groupAlive)).toEqual([]);
    },
    60_000,
  );
});
