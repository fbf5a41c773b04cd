// A team gateway for real: three `tycli serve --http` instances (each its own home) on one PostgreSQL store behind
// Debian's haproxy; registrations racing, 10,000 calls, kill -9 mid-call, a question answered elsewhere, a revoked
// token, OIDC, shared pauses and rates; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { connectHttp, type ProtocolClient } from '../../node/client.js';
import { usePostgres } from '../helpers/postgres.js';
import { startHaproxy, type TestHaproxy } from '../helpers/haproxy.js';
import { BIN, env, jsonOf, machine, startInstance, tool, tycli, type Instance } from './harness.js';

const cluster = usePostgres();
let url = '';
let admin = '';
let instances: Instance[] = [];
let proxy: TestHaproxy;
let issuer = '';
let idp: Server;
let signer: CryptoKey;
const homes: string[] = [];
const AUDIENCE = 'https://gateway.test/tysandbox';

/** Settings of every machine: rules, a low pause threshold, OIDC from the loopback issuer. */
const settings = () => ({
  permissions: { allow: ['registry(*)', 'tool(*)'], alwaysAsk: ['tool(asker)'], deny: ['tool(denied)'] },
  pause: { maxRefusals: 2, windowMs: 60_000 },
  gateway: { oidc: { issuer, audience: AUDIENCE } },
});

async function token(principal: string): Promise<string> {
  const r = await tycli(admin, ['--json', 'token', 'create', '--principal', principal], env(url));
  return jsonOf(r).token as string;
}
const client = (u: string, t: string, name = 'gw-test'): Promise<ProtocolClient> => connectHttp(u, t, { name });
/** The audit as `tycli audit --json` reads it from the store (interrupted calls folded by instance liveness). */
async function audit(args: string[] = []): Promise<Record<string, unknown>[]> {
  const r = await tycli(admin, ['--json', 'audit', ...args], env(url), 120_000);
  return jsonOf(r).records as Record<string, unknown>[];
}

beforeAll(async () => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  signer = privateKey;
  const jwk = { ...(await exportJWK(publicKey)), kid: 'gw', alg: 'ES256', use: 'sig' };
  idp = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration')
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    if (req.url === '/jwks')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(idp.address() as { port: number }).port}`;
  url = await cluster.pg.createDatabase('gateway');
  admin = machine(settings());
  homes.push(admin);
  expect((await tycli(admin, ['store', 'migrate'], env(url))).code).toBe(0);
  instances = await Promise.all(
    [0, 1, 2].map(async () => {
      const home = machine(settings());
      homes.push(home);
      return startInstance(
        home,
        ['serve', '--http', '127.0.0.1:0', '--behind-proxy', '--rate', '40', '--log-format', 'json'],
        env(url),
      );
    }),
  );
  proxy = await startHaproxy({ backends: instances.map((i) => i.port), sessionHeaders: ['tysandbox-session'] });
  await new Promise((r) => setTimeout(r, 1000)); // the first health checks
}, 180_000);

afterAll(async () => {
  await proxy?.stop();
  await Promise.all(instances.map((i) => i.stop()));
  await new Promise((r) => idp?.close(() => r(undefined)));
  for (const h of homes) rmSync(h, { recursive: true, force: true });
}, 60_000);

describe('a team gateway: three instances on one PostgreSQL store behind haproxy', () => {
  it('a registration on one instance runs on every other at once', async () => {
    const t = await token('reg-once');
    const [a, b, c] = await Promise.all(instances.map((i) => client(i.url, t)));
    const added = (await a!.tool.add(tool('hello', "return 'hello from ' + a.who;", { who: { type: 'string' } }))) as {
      revision: string;
    };
    for (const cl of [b!, c!]) {
      const r = await cl.tool.run('hello', { who: 'b' });
      expect(r).toMatchObject({ revision: added.revision, result: 'hello from b' });
    }
    await Promise.all([a!, b!, c!].map((x) => x.close()));
  });

  it('registrations and activations racing from clients on all three instances: no lost update, every revision visible everywhere', async () => {
    const clients = await Promise.all(
      instances.map(async (i, n) => client(i.url, await token(`racer-${n}`), `racer-${n}`)),
    );
    const adds = await Promise.all(
      Array.from({ length: 24 }, (_, k) =>
        clients[k % 3]!.tool.add(tool('racer', `return ${k};`)).then((r) => (r as { revision: string }).revision),
      ),
    );
    expect(new Set(adds).size).toBe(24);
    // activations racing on every instance: each one lands whole (compare-and-set), the last one wins everywhere
    const targets = adds.slice(0, 12);
    const results = await Promise.allSettled(targets.map((rev, k) => clients[k % 3]!.tool.activate('racer', rev)));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    const shown = (await Promise.all(clients.map((c) => c.tool.list()))).map(
      (l) =>
        (l as unknown as { name: string; active: string; revisions: { revision: string }[] }[]).find(
          (t) => t.name === 'racer',
        )!,
    );
    for (const s of shown) {
      expect(new Set(s.revisions.map((r) => r.revision))).toEqual(new Set(adds));
      expect(s.active).toBe(shown[0]!.active);
      expect(targets).toContain(s.active);
    }
    await Promise.all(clients.map((c) => c.close()));
  });

  it('10,000 calls spread through haproxy: 0 lost, 0 duplicated, each audited once, every instance serving', async () => {
    const t = await token('bulk');
    const setup = await client(proxy.base + '/tysandbox', t);
    await setup.tool.add(tool('echo', 'return { n: a.n };', { n: { type: 'integer' } }));
    await setup.close();
    const N = 10_000;
    const W = 24;
    const got: number[] = [];
    const errors: string[] = [];
    await Promise.all(
      Array.from({ length: W }, async (_, w) => {
        const c = await client(proxy.base + '/tysandbox', t, `bulk-${w}`);
        for (let n = w; n < N; n += W) {
          try {
            const r = (await c.tool.run('echo', { n })) as { result: { n: number } };
            got.push(r.result.n);
          } catch (e) {
            errors.push(String(e));
          }
        }
        await c.close();
      }),
    );
    expect(errors).toEqual([]);
    expect(got.length).toBe(N);
    expect(new Set(got).size).toBe(N);
    const records = (await audit(['--tool', 'echo'])).filter((r) => r.kind === 'tool');
    const done = records.filter((r) => r.outcome === 'ok');
    expect(done.length).toBe(N);
    expect(new Set(done.map((r) => r.call)).size).toBe(N);
    expect(records.filter((r) => r.outcome !== 'ok')).toEqual([]);
    // every instance served some (the intent records name the instance that ran each call)
    const pids = new Set(instances.map((i) => String(i.child.pid)));
    void pids;
    const metrics = await Promise.all(
      instances.map(async (i) => {
        const m = await fetch(`${i.base}/metrics`, { headers: { authorization: `Bearer ${t}` } }).then((r) => r.text());
        return Number(/tycli_calls_total\{tool="echo",outcome="ok",engine="node"\} (\d+)/.exec(m)?.[1] ?? 0);
      }),
    );
    expect(metrics.reduce((a, b) => a + b, 0)).toBe(N);
    for (const m of metrics) expect(m).toBeGreaterThan(N / 10);
  }, 600_000);

  it('a question waiting on one instance is answered with tycli answer on another machine', async () => {
    const t = await token('asks');
    const watcherHome = machine(settings());
    homes.push(watcherHome);
    // a person watches the shared question store from a machine of their own
    const watcher = spawn('setsid', [process.execPath, BIN, '--home', watcherHome, '--json', 'questions', '--watch'], {
      env: env(url),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: Record<string, unknown>[] = [];
    watcher.stdout.on('data', (d) =>
      String(d)
        .split('\n')
        .filter(Boolean)
        .forEach((l) => lines.push(JSON.parse(l) as Record<string, unknown>)),
    );
    try {
      const c = await client(instances[0]!.url, t);
      await c.tool.add(tool('asker', "return 'allowed';"));
      await new Promise((r) => setTimeout(r, 1000)); // the watcher holds the store's lock
      const call = c.tool.run('asker', {});
      const deadline = Date.now() + 20_000;
      while (!lines.some((l) => l.event === 'waiting') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const q = lines.find((l) => l.event === 'waiting');
      expect(q).toBeDefined();
      const answerer = machine(settings());
      homes.push(answerer);
      const a = await tycli(answerer, ['--json', 'answer', String(q!.id), 'yes'], env(url));
      expect(jsonOf(a)).toMatchObject({ ok: true, allow: true });
      expect(await call).toMatchObject({ result: 'allowed' });
      await c.close();
    } finally {
      watcher.kill('SIGTERM');
    }
  }, 60_000);

  it('a revoked token is refused by every instance within a second', async () => {
    const t = await token('revokee');
    for (const i of instances) {
      const c = await client(i.url, t);
      await c.close();
    }
    const list = jsonOf(await tycli(admin, ['--json', 'token', 'list'], env(url))).tokens as {
      id: string;
      principal: string;
    }[];
    const id = list.find((x) => x.principal === 'revokee')!.id;
    expect((await tycli(admin, ['token', 'revoke', id], env(url))).code).toBe(0);
    const revokedAt = Date.now();
    const refusedAfter = await Promise.all(
      instances.map(async (i) => {
        for (;;) {
          const r = await fetch(i.url, {
            method: 'POST',
            headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
          });
          await r.arrayBuffer();
          if (r.status === 401) return Date.now() - revokedAt;
          if (Date.now() - revokedAt > 5000) return Number.POSITIVE_INFINITY;
          await new Promise((res) => setTimeout(res, 20));
        }
      }),
    );
    for (const ms of refusedAfter) expect(ms).toBeLessThan(1000);
  });

  it('an OIDC access token from the issuer JWKS (served on loopback) names the principal on every instance', async () => {
    const jwt = await new SignJWT({ sub: 'dana' })
      .setProtectedHeader({ alg: 'ES256', kid: 'gw' })
      .setIssuer(issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(signer);
    for (const i of instances) {
      const c = await client(i.url, jwt);
      await c.tool.run('hello', { who: 'oidc' });
      await c.close();
    }
    const mine = (await audit(['--tool', 'hello'])).filter((r) => r.principal === 'user:dana' && r.outcome === 'ok');
    expect(mine).toHaveLength(3);
    // an unsigned or foreign token is refused
    const r = await fetch(instances[0]!.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${jwt}x` },
      body: '{}',
    });
    expect(r.status).toBe(401);
  });

  it('pauses and registration rates are shared by every instance', async () => {
    const t = await token('pauser');
    const cs = await Promise.all(instances.map((i) => client(i.url, t)));
    await cs[0]!.tool.add(tool('denied', 'return 1;'));
    // two refusals on two instances pause the tool everywhere (pause.maxRefusals 2)
    await expect(cs[0]!.tool.run('denied', {})).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
    await expect(cs[1]!.tool.run('denied', {})).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
    await expect(cs[2]!.tool.run('denied', {})).rejects.toMatchObject({ code: 'E_PAUSED' });
    await Promise.all(cs.map((c) => c.close()));
    // 40 registrations per principal per minute (--rate 40), counted across the instances
    const r = await Promise.all(instances.map(async (i) => client(i.url, await token('rated'))));
    void r;
    const rated = await token('rated-one');
    const rc = await Promise.all(instances.map((i) => client(i.url, rated)));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 45 }, (_, k) => rc[k % 3]!.tool.add(tool(`rated${k}`, 'return 0;'))),
    );
    const busy = outcomes.filter((o) => o.status === 'rejected');
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(40);
    for (const b of busy) expect((b as PromiseRejectedResult).reason).toMatchObject({ code: 'E_BUSY' });
    await Promise.all([...r, ...rc].map((c) => c.close()));
  }, 120_000);

  it('an instance killed with -9 mid-call: its call reads as interrupted, and its client goes on through haproxy', async () => {
    const t = await token('survivor');
    const setup = await client(proxy.base + '/tysandbox', t);
    await setup.tool.add(
      tool('sleeper', "await new Promise((r) => setTimeout(r, a.ms)); return 'woke';", { ms: { type: 'integer' } }),
    );
    await setup.close();
    // a session that lives on the instance to be killed (round robin: a few tries); which instance ran a call shows in
    // its own metrics
    const victim = instances[2]!;
    const helloCalls = async (): Promise<number> => {
      const m = await fetch(`${victim.base}/metrics`, { headers: { authorization: `Bearer ${t}` } }).then((r) =>
        r.text(),
      );
      return Number(/tycli_calls_total\{tool="hello",outcome="ok",engine="node"\} (\d+)/.exec(m)?.[1] ?? 0);
    };
    let c: ProtocolClient | undefined;
    for (let k = 0; k < 9 && !c; k++) {
      const cand = await client(proxy.base + '/tysandbox', t, `survivor-${k}`);
      const before = await helloCalls();
      await cand.tool.run('hello', { who: String(k) });
      if ((await helloCalls()) > before) c = cand;
      else await cand.close();
    }
    expect(c, 'a session on the victim').toBeDefined();
    const slow = c!.tool.run('sleeper', { ms: 30_000 }).then(
      () => 'finished',
      (e: unknown) => `failed: ${String(e)}`,
    );
    // the call is under way (its intent record is durable) when the machine dies
    const deadline = Date.now() + 20_000;
    let started: Record<string, unknown> | undefined;
    while (!started && Date.now() < deadline) {
      started = (await audit(['--tool', 'sleeper'])).find((r) => r.outcome === 'started');
      if (!started) await new Promise((r) => setTimeout(r, 100));
    }
    expect(started).toBeDefined();
    await victim.kill9();
    expect(await slow).toMatch(/^failed/);
    const after = (await audit(['--tool', 'sleeper'])).filter((r) => r.call === started!.call);
    expect(after.map((r) => r.outcome)).toEqual(['interrupted']);
    // the same client, the same session: haproxy sends it to a live instance, which resumes the session
    expect(await c!.tool.run('hello', { who: 'after' })).toMatchObject({ result: 'hello from after' });
    await c!.close();
  }, 120_000);
});
