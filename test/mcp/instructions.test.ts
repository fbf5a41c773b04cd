// `tycli mcp serve` relays the instructions of every server behind it: each under its name, sanitized and capped; test
// side.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_SERVER_INSTRUCTIONS } from '../../core/mcp/bridge/instructions.js';
import { MAX_INSTRUCTIONS } from '../../core/mcp/bridge/routes.js';
import { FIXTURE, ROOT, addNodeServer, connect, tempHome, type Connected } from './helpers.js';

const SDK_FIXTURE = join(ROOT, 'test/mcp/peers/sdk-server.mjs');
let home: string;
let cleanup: () => Promise<void>;
let conn: Connected | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await conn?.close();
  conn = undefined;
  await cleanup();
});

describe('instructions through mcp serve (several servers)', () => {
  it('names each server with its own instructions, hidden characters made visible, a long one cut; a server without any is left out', async () => {
    await addNodeServer(home, 'alpha', SDK_FIXTURE, [], {
      env: { FX_INSTRUCTIONS: 'Alpha: call search first.\u001b[2J\u202e' },
    });
    await addNodeServer(home, 'beta', SDK_FIXTURE, [], { env: { FX_INSTRUCTIONS: `Beta: ${'b'.repeat(5000)}` } });
    await addNodeServer(home, 'gamma', FIXTURE, []);
    conn = await connect({ home, sandbox: 'i' });
    const text = conn.client.getInstructions() ?? '';
    expect(text).toContain("several servers' tools");
    expect(text).toContain('## Server alpha (its tools are alpha__NAME)\nAlpha: call search first.\\x1b[2J\\u202e');
    expect(text).not.toMatch(/[\u001b\u202e]/);
    expect(text).toContain('## Server beta (its tools are beta__NAME)\nBeta: b');
    expect(text).toContain('… [cut]');
    expect(text).not.toContain('b'.repeat(MAX_SERVER_INSTRUCTIONS));
    expect(text).not.toContain('## Server gamma');
    expect(text.length).toBeLessThanOrEqual(MAX_INSTRUCTIONS + 10);
  }, 60_000);

  it('with no server that has instructions, initialize carries none', async () => {
    await addNodeServer(home, 'gamma', FIXTURE, []);
    conn = await connect({ home, sandbox: 'i' });
    expect(conn.client.getInstructions()).toBeUndefined();
  }, 60_000);
});
