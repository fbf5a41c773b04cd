// Every capability from a sandboxed Python revision on the command line, through the real host (gate, mediated fetch,
// store, secrets) under bubblewrap; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { createServer, type Server } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeHost, type NodeHost } from '../../node/host/host.js';
import { SecretsFile } from '../../node/store/secrets.js';
import { SecretGrants } from '../../core/capabilities/secrets.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { CliIO } from '../../node/cli/types.js';

const SECRET = 'py-secret-value-7c1e';
let tmp: string;
let host: NodeHost;
let listener: Server;
let port = 0;
let connections = 0;

const TOOL = [
  'async def main(args, ctx):',
  '    op = args["op"]',
  '    if op == "put":',
  '        await ctx.storage.set("visits", {"n": args["n"], "tags": ["a", None]})',
  '        return {"keys": await ctx.storage.list()}',
  '    if op == "get":',
  '        got = await ctx.storage.get("visits")',
  '        await ctx.storage.delete("visits")',
  '        return {"got": got, "after": await ctx.storage.get("visits")}',
  '    if op == "secret":',
  '        out = {"value": await ctx.get_secret("TOKEN")}',
  '        try:',
  '            await ctx.get_secret("OTHER")',
  '        except CapabilityError as e:',
  '            out["other"] = e.code',
  '        return out',
  '    if op == "resolve":',
  '        out = {"target": await ctx.resolve_invocation("pytarget")}',
  '        try:',
  '            await ctx.resolve_invocation("unlisted")',
  '        except CapabilityError as e:',
  '            out["unlisted"] = e.code',
  '        return out',
  '    if op == "subtasks":',
  '        tasks = await ctx.create_subtasks_result([{"role": "assistant", "content": {"type": "functioncall", "name": "pytarget", "arguments": {}}}])',
  '        return {"n": len(tasks), "name": tasks[0]["content"]["name"], "pinned": tasks[0]["content"]["toolRevision"], "id": tasks[0]["id"]}',
  '    if op == "fetch":',
  '        out = {}',
  '        try:',
  '            await ctx.fetch(args["url"])',
  '            out["ctx"] = "allowed"',
  '        except CapabilityError as e:',
  '            out["ctx"] = e.code',
  '        import js',
  '        try:',
  '            await js.fetch(args["url"])',
  '            out["js"] = "allowed"',
  '        except Exception as e:',
  '            out["js"] = getattr(e, "code", type(e).__name__)',
  '        from pyodide.http import pyfetch',
  '        try:',
  '            await pyfetch(args["url"])',
  '            out["pyfetch"] = "allowed"',
  '        except Exception as e:',
  '            out["pyfetch"] = type(e).__name__ + ": " + str(e)',
  '        return out',
  '    raise ValueError("unknown op")',
].join('\n');

function manifest(name: string, source: string, capabilities: ToolManifest['capabilities']): ToolManifest {
  return {
    name,
    description: `python ${name}`,
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'python', source },
    capabilities,
  };
}

function io(): CliIO {
  return { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false };
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tysandbox-pycap-'));
  listener = createServer((c) => {
    connections++;
    c.destroy();
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
  port = (listener.address() as { port: number }).port;
  host = await createNodeHost({
    home: join(tmp, 'home'),
    globals: { sandbox: 'required', allow: [], deny: [] },
    io: io(),
    python: false,
    cwd: tmp,
    env: {},
  });
  await host.registry.install(manifest('pytarget', 'def main(args, ctx):\n    return 1', undefined));
  const r = await host.registry.install(
    manifest('pycaps', TOOL, {
      storage: {},
      secrets: ['TOKEN', 'OTHER'],
      subtasks: true,
      resolveInvocation: ['pytarget'],
      fetch: [{ origin: `https://127.0.0.1:${port}`, access: 'read' }],
    }),
  );
  const values = new SecretsFile(host.paths.secretsFile, (fn) => host.store.backend.withLock('secrets-file', fn));
  await values.set('TOKEN', SECRET);
  await values.set('OTHER', 'not-granted');
  await new SecretGrants(host.store).grant('TOKEN', { tool: 'pycaps', revision: r.revision, origins: [] });
}, 60_000);
afterAll(async () => {
  await host?.close();
  await new Promise<void>((r) => listener.close(() => r()));
  await rm(tmp, { recursive: true, force: true });
});

const call = async (args: unknown) => host.invoker.invoke('pycaps', args);

describe('capabilities from Python on the command line (Pyodide in the Node sandbox, bubblewrap)', () => {
  it('storage: a value set in one call is read, deleted and gone in the next (per-revision store)', async () => {
    expect(await call({ op: 'put', n: 7 })).toMatchObject({ ok: true, result: { keys: ['visits'] } });
    expect(await call({ op: 'get' })).toMatchObject({
      ok: true,
      result: { got: { n: 7, tags: ['a', null] }, after: null },
    });
  }, 180_000);

  it('get_secret returns a granted secret; an ungranted one raises CapabilityError E_SECRET_DENIED', async () => {
    expect(await call({ op: 'secret' })).toMatchObject({
      ok: true,
      result: { value: SECRET, other: 'E_SECRET_DENIED' },
    });
  }, 180_000);

  it("resolve_invocation gives the listed tool's revision ids; an unlisted name is E_CAPABILITY_DENIED", async () => {
    const target = (await host.registry.resolve('pytarget')).revision;
    expect(await call({ op: 'resolve' })).toMatchObject({
      ok: true,
      result: { target: { toolRevision: target }, unlisted: 'E_CAPABILITY_DENIED' },
    });
  }, 180_000);

  it('create_subtasks_result compiles drafts into hashed tasks pinned to the active revision', async () => {
    const target = (await host.registry.resolve('pytarget')).revision;
    const r = await call({ op: 'subtasks' });
    expect(r).toMatchObject({ ok: true, result: { n: 1, name: 'pytarget', pinned: target } });
    expect((r as { result: { id: string } }).result.id).toMatch(/^b[a-z2-7]+$/);
  }, 180_000);

  it('ctx.fetch, js.fetch and pyfetch to a loopback listener are refused with E_FETCH_TARGET, even with a grant; nothing connects', async () => {
    const url = `https://127.0.0.1:${port}/x`;
    const r = await call({ op: 'fetch', url });
    expect(r).toMatchObject({ ok: true, result: { ctx: 'E_FETCH_TARGET', js: 'E_FETCH_TARGET' } });
    // pyodide.http.pyfetch reaches the same mediated fetch; Pyodide wraps the refusal in its AbortError.
    expect((r as { result: { pyfetch: string } }).result.pyfetch).toMatch(/^AbortError: .*loopback/i);
    expect(connections).toBe(0);
  }, 180_000);
});
