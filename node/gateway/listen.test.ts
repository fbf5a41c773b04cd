// The gateway front over real sockets: exposure rules, health, authentication (server token, per-client tokens, OIDC
// from a JWKS on loopback), RFC 9728, admission, metrics, traces to a loopback OTLP receiver; test side.
import { afterAll, describe, expect, it } from 'vitest';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import selfsigned from 'selfsigned';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import type { AuditRecord } from '../../core/audit/trail.js';
import { Admission } from './admission.js';
import { Authenticator } from './auth.js';
import { startGateway, parseListen, checkExposure, type Gateway, type GatewayOptions } from './listen.js';
import { GatewayMetrics } from './metrics.js';
import { OidcVerifier } from './oidc.js';
import { TokenStore } from './tokens.js';
import { Tracing } from './tracing.js';

const STATIC = 'static-token-0123456789abcdef';
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}
function call(
  base: string,
  path: string,
  opts: { method?: string; token?: string; headers?: Record<string, string>; body?: string; ca?: string } = {},
): Promise<Reply> {
  const u = new URL(path, base);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, {
    method: opts.method ?? 'GET',
    headers,
    ...(opts.ca ? { ca: opts.ca } : {}),
    agent: false,
  });
  return new Promise((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d) => (body += String(d)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

async function gateway(
  over: Partial<GatewayOptions> & { tokens?: TokenStore; oidc?: OidcVerifier; audit?: AuditRecord[] } = {},
): Promise<Gateway & { seen: { principal: string | undefined; via: string }[] }> {
  const seen: { principal: string | undefined; via: string }[] = [];
  const metrics = await GatewayMetrics.create();
  const g = await startGateway({
    listen: { host: '127.0.0.1', port: 0 },
    auth: new Authenticator({
      staticToken: STATIC,
      ...(over.tokens ? { tokens: over.tokens } : {}),
      ...(over.oidc ? { oidc: over.oidc } : {}),
    }),
    admission: new Admission(
      { maxInFlightPerPrincipal: 2 },
      {
        refused: (r) => metrics.refused(r),
        audit: async (r) => void over.audit?.push(r),
      },
    ),
    metrics,
    ready: async () => ({ ok: true, checks: { store: { ok: true }, sandbox: { ok: true } } }),
    paths: ['/mcp'],
    route: async (req, res, ctx) => {
      seen.push({ principal: ctx.principal, via: ctx.via });
      const wait = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('wait') ?? 0);
      req.resume();
      await new Promise((r) => setTimeout(r, wait));
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ principal: ctx.principal ?? null }));
    },
    ...over,
  });
  closers.push(() => g.close());
  return Object.assign(g, { seen });
}

describe('where the gateway listens', () => {
  it('parses PORT, HOST:PORT and [IPv6]:PORT; refuses a name', () => {
    expect(parseListen('8080')).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(parseListen('0.0.0.0:80')).toEqual({ host: '0.0.0.0', port: 80 });
    expect(parseListen('[::]:9000')).toEqual({ host: '::', port: 9000 });
    expect(() => parseListen('example.com:80')).toThrow(/HOST:PORT|not an IP/);
    expect(() => parseListen('70000')).toThrow();
  });
  it('beyond loopback only with TLS or --behind-proxy', async () => {
    expect(() => checkExposure('0.0.0.0', false, false)).toThrow(/--tls-cert FILE --tls-key FILE, or --behind-proxy/);
    expect(() => checkExposure('127.0.0.1', false, false)).not.toThrow();
    expect(() => checkExposure('0.0.0.0', true, false)).not.toThrow();
    expect(() => checkExposure('0.0.0.0', false, true)).not.toThrow();
    await expect(gateway({ listen: { host: '0.0.0.0', port: 0 } })).rejects.toMatchObject({ code: 'E_USAGE' });
  });
  it('serves HTTPS with --tls-cert/--tls-key; the token is accepted only over it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ty-tls-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
      keySize: 2048,
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    });
    writeFileSync(join(dir, 'cert.pem'), pems.cert);
    writeFileSync(join(dir, 'key.pem'), pems.private);
    const g = await gateway({ tls: { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') } });
    expect(g.base).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const r = await call(g.base, '/mcp', { method: 'POST', token: STATIC, ca: pems.cert, body: '{}' });
    expect(r.status).toBe(200);
    await expect(call(g.base.replace('https:', 'http:'), '/healthz')).rejects.toThrow();
  });
});

describe('health, readiness and metrics', () => {
  it('/healthz and /readyz answer without a token; /readyz is 503 with the failing check when not ready', async () => {
    const g = await gateway();
    expect(await call(g.base, '/healthz')).toMatchObject({ status: 200, body: '{"ok":true,"status":"alive"}' });
    expect(JSON.parse((await call(g.base, '/readyz')).body)).toEqual({
      ok: true,
      checks: { store: { ok: true }, sandbox: { ok: true } },
    });
    const down = await gateway({
      ready: async () => ({
        ok: false,
        checks: { store: { ok: false, reason: 'unreachable' }, sandbox: { ok: true } },
      }),
    });
    const r = await call(down.base, '/readyz');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).checks.store).toEqual({ ok: false, reason: 'unreachable' });
  });
  it('/metrics needs a token and exposes the gateway metrics in the Prometheus text format', async () => {
    const g = await gateway();
    expect((await call(g.base, '/metrics')).status).toBe(401);
    const r = await call(g.base, '/metrics', { token: STATIC });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const name of [
      'tycli_refusals_total',
      'tycli_sandboxes_alive',
      'tycli_queue_depth',
      'tycli_asks_pending',
      'tycli_calls_total',
      'tycli_call_duration_seconds',
      'process_resident_memory_bytes',
    ])
      expect(r.body).toContain(`# TYPE ${name}`);
  });
});

describe('authentication', () => {
  it('without OIDC: 401 with a plain Bearer challenge and no protected-resource metadata (no OAuth flow)', async () => {
    const g = await gateway();
    const r = await call(g.base, '/mcp', { method: 'POST', body: '{}' });
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer realm="tysandbox"');
    expect((await call(g.base, '/.well-known/oauth-protected-resource')).status).toBe(404);
    expect((await call(g.base, '/.well-known/oauth-protected-resource/mcp')).status).toBe(404);
    const wrong = await call(g.base, '/mcp', { method: 'POST', token: 'nope', body: '{}' });
    expect(wrong.headers['www-authenticate']).toBe('Bearer realm="tysandbox", error="invalid_token"');
  });
  it('Host and Origin: 421 for a foreign Host on loopback (DNS rebinding), 403 for a foreign Origin', async () => {
    const g = await gateway();
    expect(
      (await call(g.base, '/mcp', { method: 'POST', token: STATIC, headers: { host: 'evil.example:80' } })).status,
    ).toBe(421);
    expect(
      (await call(g.base, '/mcp', { method: 'POST', token: STATIC, headers: { origin: 'https://evil.example' } }))
        .status,
    ).toBe(403);
  });
  it('per-client tokens name the principal; a revoked one is refused at the next request', async () => {
    const tokens = new TokenStore(new Store(new MemoryStoreBackend()));
    const g = await gateway({ tokens });
    const { token, record } = await tokens.create('alice');
    const ok = await call(g.base, '/mcp', { method: 'POST', token, body: '{}' });
    expect(JSON.parse(ok.body)).toEqual({ principal: 'user:alice' });
    expect(g.seen.at(-1)).toEqual({ principal: 'user:alice', via: 'token' });
    await tokens.revoke(record.id);
    // without a change notification the cached verdict lasts at most 500 ms
    await new Promise((r) => setTimeout(r, 600));
    const r = await call(g.base, '/mcp', { method: 'POST', token, body: '{}' });
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body).error).toBe('token revoked');
  });
  it('an expired token is refused', async () => {
    let now = Date.now();
    const tokens = new TokenStore(new Store(new MemoryStoreBackend()), () => now);
    const g = await gateway({ tokens });
    const { token } = await tokens.create('bob', now + 60_000);
    expect((await call(g.base, '/mcp', { method: 'POST', token, body: '{}' })).status).toBe(200);
    now += 120_000;
    await new Promise((r) => setTimeout(r, 600));
    const r = await call(g.base, '/mcp', { method: 'POST', token, body: '{}' });
    expect([r.status, JSON.parse(r.body).error]).toEqual([401, 'token expired']);
  });
});

describe('OIDC access tokens (a JWKS served on loopback)', async () => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const other = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  let jwksHits = 0;
  const idp: Server = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration')
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    if (req.url === '/jwks') {
      jwksHits++;
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => idp.close(r)));
  const issuer = `http://127.0.0.1:${(idp.address() as { port: number }).port}`;
  const sign = (
    claims: Record<string, unknown>,
    o: { key?: CryptoKey; aud?: string; exp?: string; iss?: string } = {},
  ) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(o.iss ?? issuer)
      .setAudience(o.aud ?? 'https://gateway.example/mcp')
      .setIssuedAt()
      .setExpirationTime(o.exp ?? '5m')
      .sign(o.key ?? privateKey);

  it('a token signed by a key of the issuer JWKS, for this audience, authenticates as user:<sub>', async () => {
    const g = await gateway({
      oidc: new OidcVerifier({ issuer, audience: 'https://gateway.example/mcp', scopes: ['tools'] }),
    });
    const r = await call(g.base, '/mcp', { method: 'POST', token: await sign({ sub: 'carol' }), body: '{}' });
    expect(JSON.parse(r.body)).toEqual({ principal: 'user:carol' });
    expect(g.seen.at(-1)?.via).toBe('oidc');
    expect(jwksHits).toBeGreaterThan(0);
  });
  it('refuses another audience, another issuer, an expired token, an unknown key and a bad claim', async () => {
    const g = await gateway({ oidc: new OidcVerifier({ issuer, audience: 'https://gateway.example/mcp' }) });
    const refused = async (token: string, reason: RegExp) => {
      const r = await call(g.base, '/mcp', { method: 'POST', token, body: '{}' });
      expect(r.status).toBe(401);
      expect(JSON.parse(r.body).error).toMatch(reason);
    };
    await refused(await sign({ sub: 'carol' }, { aud: 'https://other.example' }), /ERR_JWT_CLAIM_VALIDATION_FAILED/);
    await refused(await sign({ sub: 'carol' }, { iss: 'https://evil.example' }), /ERR_JWT_CLAIM_VALIDATION_FAILED/);
    await refused(await sign({ sub: 'carol' }, { exp: '-5m' }), /ERR_JWT_EXPIRED/);
    await refused(await sign({ sub: 'carol' }, { key: other.privateKey }), /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/);
    await refused(await sign({ sub: 'has space' }), /not a principal name/);
    // unsigned (alg none) is never accepted
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const none = `${b64({ alg: 'none' })}.${b64({ sub: 'x', iss: issuer, aud: 'https://gateway.example/mcp', exp: 9e9 })}.x`;
    await refused(none, /ERR_/);
  });
  it('with OIDC: 401 names the RFC 9728 metadata, which names the issuer; a configured claim names the principal', async () => {
    const g = await gateway({
      oidc: new OidcVerifier({ issuer, audience: 'https://gateway.example/mcp', claim: 'email', scopes: ['tools'] }),
    });
    const r = await call(g.base, '/mcp', { method: 'POST', body: '{}' });
    expect(r.headers['www-authenticate']).toBe(
      `Bearer realm="tysandbox", resource_metadata="${g.base}/.well-known/oauth-protected-resource/mcp"`,
    );
    const meta = await call(g.base, '/.well-known/oauth-protected-resource/mcp');
    expect(JSON.parse(meta.body)).toEqual({
      resource: `${g.base}/mcp`,
      authorization_servers: [issuer],
      bearer_methods_supported: ['header'],
      resource_name: 'tysandbox gateway',
      scopes_supported: ['tools'],
    });
    const ok = await call(g.base, '/mcp', {
      method: 'POST',
      token: await sign({ sub: 'id-42', email: 'dave@example.com' }),
      body: '{}',
    });
    expect(JSON.parse(ok.body)).toEqual({ principal: 'user:dave@example.com' });
  });
});

describe('admission', () => {
  it('requests beyond the per-principal limit get 429 E_BUSY with Retry-After; other principals still pass; one audit record per principal', async () => {
    const tokens = new TokenStore(new Store(new MemoryStoreBackend()));
    const audit: AuditRecord[] = [];
    const g = await gateway({ tokens, audit });
    const alice = (await tokens.create('alice')).token;
    const bob = (await tokens.create('bob')).token;
    const slow = Array.from({ length: 5 }, () =>
      call(g.base, '/mcp?wait=400', { method: 'POST', token: alice, body: '{}' }),
    );
    await new Promise((r) => setTimeout(r, 100));
    const other = await call(g.base, '/mcp', { method: 'POST', token: bob, body: '{}' });
    expect(other.status).toBe(200);
    const results = await Promise.all(slow);
    const busy = results.filter((r) => r.status === 429);
    expect(results.filter((r) => r.status === 200)).toHaveLength(2);
    expect(busy).toHaveLength(3);
    for (const r of busy) {
      expect(r.headers['retry-after']).toBe('1');
      expect(JSON.parse(r.body).error.data.code).toBe('E_BUSY');
    }
    const m = await call(g.base, '/metrics', { token: STATIC });
    expect(m.body).toMatch(/tycli_refusals_total\{reason="principal-calls"\} 3/);
    await g.close();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      principal: 'user:alice',
      kind: 'admission',
      decision: 'deny',
      outcome: 'denied',
      code: 'E_BUSY',
      target: expect.stringMatching(/^3 request\(s\) refused in \d+ s: principal-calls 3$/),
    });
  });
});

describe('traces', () => {
  it('a request continuing a W3C traceparent is exported as OTLP/HTTP JSON with nested spans', async () => {
    const bodies: unknown[] = [];
    const receiver = createServer((req, res) => {
      let b = '';
      req.on('data', (d) => (b += String(d)));
      req.on('end', () => {
        expect(req.url).toBe('/v1/traces');
        expect(req.headers['content-type']).toBe('application/json');
        expect(req.headers['x-api-key']).toBe('k 1');
        bodies.push(JSON.parse(b));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => receiver.close(r)));
    const tracing = await Tracing.start({
      endpoint: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/v1/traces`,
      headers: { 'x-api-key': 'k 1' },
      serviceName: 'tycli-test',
      resource: { 'deployment.environment': 'test' },
    });
    closers.push(() => tracing.close());
    const g = await gateway({
      tracing,
      route: async (_req, res) => {
        await tracing.callTracer.span('tysandbox.call', { 'tysandbox.tool': 'weather' }, async () => {
          await tracing.callTracer.span('tysandbox.sandbox', { 'tysandbox.engine': 'node' }, async () => undefined);
        });
        res.writeHead(200).end('{}');
      },
    });
    const parent = '0af7651916cd43dd8448eb211c80319c';
    await call(g.base, '/mcp', {
      method: 'POST',
      token: STATIC,
      body: '{}',
      headers: { traceparent: `00-${parent}-b7ad6b7169203331-01` },
    });
    await tracing.flush();
    const spans = bodies.flatMap(
      (b) =>
        (b as { resourceSpans: { resource: unknown; scopeSpans: { spans: Record<string, unknown>[] }[] }[] })
          .resourceSpans[0]!.scopeSpans[0]!.spans,
    );
    const byName = Object.fromEntries(spans.map((s) => [s.name as string, s]));
    expect(Object.keys(byName).sort()).toEqual(['tysandbox.call', 'tysandbox.request', 'tysandbox.sandbox']);
    for (const s of spans) {
      expect(s.traceId).toBe(parent);
      expect(s.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(BigInt(s.endTimeUnixNano as string)).toBeGreaterThanOrEqual(BigInt(s.startTimeUnixNano as string));
    }
    expect(byName['tysandbox.request']!.parentSpanId).toBe('b7ad6b7169203331');
    expect(byName['tysandbox.call']!.parentSpanId).toBe(byName['tysandbox.request']!.spanId);
    expect(byName['tysandbox.sandbox']!.parentSpanId).toBe(byName['tysandbox.call']!.spanId);
    expect(byName['tysandbox.sandbox']!.attributes).toEqual([
      { key: 'tysandbox.engine', value: { stringValue: 'node' } },
    ]);
    const resource = (bodies[0] as { resourceSpans: { resource: { attributes: unknown[] } }[] }).resourceSpans[0]!
      .resource.attributes;
    expect(resource).toContainEqual({ key: 'service.name', value: { stringValue: 'tycli-test' } });
    expect(tracing.stats()).toMatchObject({ exported: 3, dropped: 0 });
  });
});
