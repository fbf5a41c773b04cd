// The bridge's direct tools/call path (raw JSON-RPC forwarding) and the per-call definition freshness check, against
// the fixture peer; test side.
import { lstatSync, readFileSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FIXTURE, addNodeServer, connect, groupAlive, tempHome, type Connected, mcpRefusal } from './helpers.js';
import {
  buildDefinition,
  definitionsDir,
  isRacy,
  loadDefinitionSync,
  sameStamp,
  saveDefinition,
} from '../../node/mcp/definitions.js';
import { UpstreamSession } from '../../node/mcp/upstream.js';

let home: string;
let cleanup: () => Promise<void>;
let conn: Connected | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  vi.useRealTimers();
  await conn?.close();
  conn = undefined;
  await cleanup();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
function text(r: unknown): string {
  return (r as { content: { text: string }[] }).content[0]?.text ?? '';
}
const refusal = mcpRefusal;
type Received = { received: { method: string; name?: string }[]; pgid: number };
async function received(c: Connected): Promise<Received> {
  return JSON.parse(text(await c.client.callTool({ name: 'fx__received', arguments: {} }))) as Received;
}
/** Record what the client sends (request ids included). */
function recordSent(c: Connected): Record<string, unknown>[] {
  const sent: Record<string, unknown>[] = [];
  const send = c.transport.send.bind(c.transport);
  c.transport.send = async (m) => {
    sent.push(m as unknown as Record<string, unknown>);
    return send(m);
  };
  return sent;
}

describe('definition freshness (one lstat per call)', () => {
  it('a file changed within 2 s (or dated ahead) is racy; any stamp field that differs is a change', () => {
    const now = 1_000_000;
    expect(isRacy({ mtimeMs: now - 100, ctimeMs: now - 10_000 }, now)).toBe(true);
    expect(isRacy({ mtimeMs: now - 10_000, ctimeMs: now - 1_999 }, now)).toBe(true);
    expect(isRacy({ mtimeMs: now + 5_000, ctimeMs: now + 5_000 }, now)).toBe(true);
    expect(isRacy({ mtimeMs: now - 2_001, ctimeMs: now - 3_000 }, now)).toBe(false);
    const st = { dev: 1, ino: 2, size: 3, mtimeMs: 4, ctimeMs: 5, mode: 0o100600 };
    expect(sameStamp(st, { ...st })).toBe(true);
    for (const k of Object.keys(st) as (keyof typeof st)[])
      expect(sameStamp(st, { ...st, [k]: st[k] + 1 }), k).toBe(false);
  });

  it('a same-size rewrite in place (same inode) is seen by the very next load, even right after the last one', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search'] });
    const file = join(definitionsDir(home), 'fx.json');
    expect(loadDefinitionSync(home, 'fx')?.allow).toEqual(['search']);
    const before = lstatSync(file);
    const body = readFileSync(file, 'utf8');
    writeFileSync(file, body.replace('"search"', '"zzzzzz"'));
    // the old times put back (to the precision utimes keeps): the same inode and size, close times
    utimesSync(file, before.atimeMs / 1000, before.mtimeMs / 1000);
    const after = lstatSync(file);
    expect([after.ino, after.size]).toEqual([before.ino, before.size]);
    expect(loadDefinitionSync(home, 'fx')?.allow).toEqual(['zzzzzz']);
  });

  it('an old, unchanged file is served from the cache; a later rewrite in place is still seen', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search'] });
    const file = join(definitionsDir(home), 'fx.json');
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 60_000); // the file now looks a minute old: its times can be trusted
    const a = loadDefinitionSync(home, 'fx');
    expect(loadDefinitionSync(home, 'fx')).toBe(a); // the same frozen object: not read again
    vi.useRealTimers();
    await sleep(30); // a later file-system tick than the first write
    writeFileSync(file, readFileSync(file, 'utf8').replace('"search"', '"zzzzzz"'));
    expect(loadDefinitionSync(home, 'fx')?.allow).toEqual(['zzzzzz']);
  });

  it('the shared definition is frozen all the way down; a chmod or a symlink in its place is refused', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search'], env: { K: 'v' } });
    const def = loadDefinitionSync(home, 'fx')!;
    expect(() => (def.allow as string[]).push('x')).toThrow(TypeError);
    expect(() => ((def.env as Record<string, string>).K = 'w')).toThrow(TypeError);
    const file = join(definitionsDir(home), 'fx.json');
    const { chmodSync } = await import('node:fs');
    chmodSync(file, 0o644);
    expect(() => loadDefinitionSync(home, 'fx')).toThrow(expect.objectContaining({ code: 'E_INVALID_SETTINGS' }));
    chmodSync(file, 0o600);
    expect(loadDefinitionSync(home, 'fx')?.allow).toEqual(['search']);
    const elsewhere = join(home, 'elsewhere.json');
    writeFileSync(elsewhere, readFileSync(file), { mode: 0o600 });
    unlinkSync(file);
    symlinkSync(elsewhere, file);
    expect(() => loadDefinitionSync(home, 'fx')).toThrow(expect.objectContaining({ code: 'E_INVALID_SETTINGS' }));
  });
});

describe('direct tools/call path', () => {
  it('re-adding with another command or another folder ends the older session (told it is gone)', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await connect({ home, sandbox: 't' });
    const first = (await received(conn)).pgid;
    await addNodeServer(home, 'fx', FIXTURE, ['--variant'], { ask: 'none' });
    expect((await refusal(received(conn))).message).toContain('gone');
    expect(groupAlive(first)).toBe(false);
    const second = (await received(conn)).pgid;
    expect(second).not.toBe(first);
    await saveDefinition(
      home,
      buildDefinition({
        name: 'fx',
        command: [process.execPath, FIXTURE, '--variant'],
        folder: '/tmp',
        processEnv: process.env,
        ask: 'none',
      }),
    );
    expect((await refusal(received(conn))).message).toContain('gone');
    expect(groupAlive(second)).toBe(false);
    expect((await received(conn)).pgid).not.toBe(second);
  });

  it('logs each call like the SDK path and answers params it does not take through the SDK path', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search', 'received'] });
    conn = await connect({ home, sandbox: 't' });
    expect(text(await conn.client.callTool({ name: 'fx__search', arguments: { q: 'z' } }))).toBe('found z');
    expect(conn.logs).toContain(JSON.stringify({ server: 'fx', method: 'tools/call', name: 'search', outcome: 'ok' }));
    // arguments that are not an object: the SDK Server's own -32602, nothing forwarded
    conn.transport.writeRaw(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'raw-1',
        method: 'tools/call',
        params: { name: 'fx__search', arguments: 'q' },
      }) + '\n',
    );
    for (let i = 0; i < 100 && !conn.transport.raw.some((m) => (m as { id?: unknown }).id === 'raw-1'); i++)
      await sleep(10);
    const reply = conn.transport.raw.find((m) => (m as { id?: unknown }).id === 'raw-1') as {
      error?: { code: number };
      result?: unknown;
    };
    // the SDK Server's own answer to a request its schema refuses (-32603 in SDK 1.x)
    expect(reply.result).toBeUndefined();
    expect(reply.error?.code).toBeLessThan(-32000);
    expect((await received(conn)).received.filter((m) => m.method === 'tools/call').map((m) => m.name)).toEqual([
      'search',
      'received',
    ]);
  });

  it('a call the client cancels is cancelled on the server and gets no response; the session goes on', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await connect({ home, sandbox: 't' });
    const sent = recordSent(conn);
    const ctl = new AbortController();
    const slow = conn.client.callTool({ name: 'fx__slow', arguments: { ms: 400 } }, undefined, { signal: ctl.signal });
    // wait until the server has it
    for (let i = 0; i < 100; i++) {
      if ((await received(conn)).received.some((m) => m.name === 'slow')) break;
      await sleep(10);
    }
    ctl.abort();
    await expect(slow).rejects.toBeTruthy();
    const id = sent.find((m) => (m.params as { name?: string } | undefined)?.name === 'fx__slow')?.id;
    expect(id).toBeDefined();
    await sleep(600); // the server's late answer has come and gone
    const after = await received(conn);
    expect(after.received.some((m) => m.method === 'notifications/cancelled')).toBe(true);
    expect(
      conn.transport.raw.some(
        (m) => (m as { id?: unknown; method?: unknown }).id === id && (m as { method?: unknown }).method === undefined,
      ),
    ).toBe(false);
    expect(conn.logs).toContain(
      JSON.stringify({ server: 'fx', method: 'tools/call', name: 'slow', outcome: 'failed' }),
    );
  });

  it('a call past its time gets E_MCP_TIMEOUT (-32011, never the SDK timeout code) and its session and server end', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await connect({
      home,
      sandbox: 't',
      startUpstream: (d, o, s) => UpstreamSession.start(d, { ...o, requestTimeoutMs: 300 }, s),
    });
    const first = (await received(conn)).pgid;
    const r = await refusal(conn.client.callTool({ name: 'fx__slow', arguments: { ms: 5000 } }));
    expect([r.code, r.stable]).toEqual([-32011, 'E_MCP_TIMEOUT']);
    expect(r.message).toMatch(/did not answer tools\/call within 0\.3 s/);
    // the hung server's process group is gone; the next call gets a fresh server
    for (let i = 0; i < 200 && groupAlive(first); i++) await new Promise((res) => setTimeout(res, 20));
    expect(groupAlive(first)).toBe(false);
    const next = await received(conn);
    expect(next.pgid).not.toBe(first);
  });

  it('a result that is not an MCP CallToolResult is refused with E_MCP; structured content is checked against the output schema', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await connect({ home, sandbox: 't' });
    for (const how of ['content', 'block', 'iserror', 'number']) {
      const r = await refusal(conn.client.callTool({ name: 'fx__bad', arguments: { how } }));
      expect(r.stable, how).toBe('E_MCP');
      expect(r.message).toContain('not MCP');
    }
    expect((await conn.client.callTool({ name: 'fx__shaped', arguments: { n: 1 } })).structuredContent).toEqual({
      n: 1,
    });
    const off = await refusal(conn.client.callTool({ name: 'fx__shaped', arguments: { n: 'x' } }));
    expect(off.code).toBe(-32602);
    expect(off.message).toContain('output schema');
  });
});
