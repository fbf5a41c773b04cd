// Mediated fetch end to end: core pipeline + Node transport against a local HTTPS server; test side.
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { Gate, GateRequest } from '../../core/exec/runtime.js';
import { TyError } from '../../core/errors.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { revisionId } from '../../core/revisions/registry.js';
import { createMediatedFetch, type CallerIdentity, type FetchLimits } from '../../core/capabilities/fetch/mediated.js';
import { SecretBroker, SecretGrants, type SecretValues } from '../../core/capabilities/secrets.js';
import { NodeFetchTransport } from '../../node/fetch.js';
import {
  OTHER_TEST_HOST,
  TEST_HOST,
  startHttpsServer,
  streamBytes,
  type TestHttpsServer,
} from '../helpers/https-server.js';
import { codeOf } from '../helpers/errors.js';

const cases = JSON.parse(readFileSync(new URL('../fixtures/cases/fetch-targets.json', import.meta.url), 'utf8')) as {
  refused: { url: string; kind: string }[];
  allowed_when_rules_allow: { url: string; kind: string }[];
};

let server: TestHttpsServer;
const transports: NodeFetchTransport[] = [];

/** A transport that reaches the test server: test names resolve to 127.0.0.1, which the test-only hook lets through. */
function testTransport(): NodeFetchTransport {
  const t = new NodeFetchTransport({
    ca: server.ca,
    unsafeTestHooks: {
      resolve: async (h) => (h === TEST_HOST || h === OTHER_TEST_HOST ? ['127.0.0.1'] : []),
      allowAddresses: ['127.0.0.1'],
    },
  });
  transports.push(t);
  return t;
}

/** Same name mapping, but without the loopback allowance: the production address policy. */
function strictTransport(resolveTo: string[] = ['127.0.0.1']): NodeFetchTransport {
  const t = new NodeFetchTransport({ ca: server.ca, unsafeTestHooks: { resolve: async () => resolveTo } });
  transports.push(t);
  return t;
}

function fakeGate(allow = true): { gate: Gate; calls: GateRequest[] } {
  const calls: GateRequest[] = [];
  return {
    calls,
    gate: {
      async authorize(r) {
        calls.push(r);
        if (!allow) throw new TyError('E_CAPABILITY_DENIED', `fetch(${r.access}:${r.target}) was not allowed`);
      },
      async run() {
        throw new Error('not used');
      },
    },
  };
}

async function identityFor(
  fetchCaps: NonNullable<ToolManifest['capabilities']>['fetch'],
  secrets: string[] = [],
): Promise<CallerIdentity> {
  const manifest: ToolManifest = {
    name: 'fetcher',
    description: 'test tool',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 1' },
    capabilities: { fetch: fetchCaps, secrets },
  };
  return { name: 'fetcher', revision: await revisionId(manifest), manifest, principal: 'test:user' };
}

const never = new AbortController().signal;
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const unb64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

beforeAll(async () => {
  // Dual-stack listener, so a leaked request to 127.x, 0.0.0.0, [::] or [::ffff:127.0.0.1] on this port would reach it.
  server = await startHttpsServer({ host: '::' }).catch(() => startHttpsServer());
});
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.close()));
});
afterAll(async () => {
  await server.close();
});

describe('fetch-targets.json: refused before any connection, even with every origin allowed', () => {
  const codeFor = (url: string): string => {
    if (!url.startsWith('https:')) return 'E_FETCH_SCHEME';
    return new URL(url).username ? 'E_FETCH_CREDENTIALS' : 'E_FETCH_TARGET';
  };
  it.each(cases.refused.map((c) => [c.kind, c.url]))('%s: %s', async (_kind, raw) => {
    // Point every network case at the live test server's port so a leak would be seen.
    let url = raw;
    if (raw.startsWith('https:')) {
      const u = new URL(raw);
      u.port = String(server.port);
      url = u.href;
    }
    const { gate, calls } = fakeGate(true);
    let transportCalls = 0;
    const real = testTransport();
    const mf = createMediatedFetch({ gate, transport: { request: (...a) => (transportCalls++, real.request(...a)) } });
    const id = await identityFor([{ origin: 'https://example.com', access: '*' }]);
    const before = server.connections();
    const reqsBefore = server.requests.length;
    expect(await codeOf(mf(id, { url }, never))).toBe(codeFor(raw));
    expect(calls).toHaveLength(0); // a blocked target is never even asked about
    expect(transportCalls).toBe(0);
    expect(server.connections()).toBe(before);
    expect(server.requests.length).toBe(reqsBefore);
  });

  it.each(cases.allowed_when_rules_allow.map((c) => [c.kind, c.url]))(
    '%s: %s passes the filter and reaches the gate',
    async (_k, url) => {
      const { gate, calls } = fakeGate(false);
      let transportCalls = 0;
      const mf = createMediatedFetch({
        gate,
        transport: {
          request: async () => (transportCalls++, { status: 200, statusText: '', headers: [], body: '', url }),
        },
      });
      const id = await identityFor([{ origin: 'https://example.com', access: '*' }]);
      // Not declared in the manifest: refused by the upper bound (told to the gate, requested: false, to be audited),
      // still without a connection.
      expect(await codeOf(mf(id, { url }, never))).toBe('E_CAPABILITY_DENIED');
      expect(calls).toHaveLength(1);
      expect(calls[0]?.requested).toBe(false);
      expect(transportCalls).toBe(0);
    },
  );
});

describe('connect-time address check (Node)', () => {
  it('refuses a public-looking name that resolves to loopback, with no connection made', async () => {
    const { gate, calls } = fakeGate(true);
    const mf = createMediatedFetch({ gate, transport: strictTransport(['127.0.0.1']) });
    const id = await identityFor([{ origin: `https://${TEST_HOST}:${server.port}`, access: '*' }]);
    const before = server.connections();
    expect(await codeOf(mf(id, { url: server.url('/') }, never))).toBe('E_FETCH_TARGET');
    expect(calls).toHaveLength(1); // names pass the pre-check and are authorized; the connect-time check still refuses
    expect(server.connections()).toBe(before);
  });

  it.each([
    [['10.0.0.5']],
    [['8.8.8.8', '169.254.169.254']],
    [['::1']],
    [['::ffff:127.0.0.1']],
    [['64:ff9b::7f00:1']],
    [['fe80::1%lo']],
  ])('refuses a name resolving to %j, without echoing the internal address', async (addrs) => {
    const before = server.connections();
    const err = await strictTransport(addrs)
      .request({ url: server.url('/'), method: 'GET', headers: [] }, { timeoutMs: 5000, maxBytes: 1024 }, never)
      .catch((e: TyError) => e);
    expect((err as TyError).code).toBe('E_FETCH_TARGET');
    for (const a of addrs) expect((err as TyError).message).not.toContain(a.split('%')[0]);
    expect(server.connections()).toBe(before);
  });

  it.each(['127.1', '0x7f.1', '[::ffff:7f00:1]', '0.0.0.0', '[::]'])(
    'the transport alone refuses literal %s on the server port',
    async (host) => {
      const before = server.connections();
      const url = `https://${host}:${server.port}/`;
      expect(
        await codeOf(
          strictTransport().request({ url, method: 'GET', headers: [] }, { timeoutMs: 5000, maxBytes: 1024 }, never),
        ),
      ).toBe('E_FETCH_TARGET');
      expect(server.connections()).toBe(before);
    },
  );
});

describe('authorization and access class', () => {
  it('fetches through the gate with (revision, origin, access) and returns plain data', async () => {
    server.route('/hello', (_req, res) => {
      res.writeHead(201, { 'content-type': 'text/plain', 'x-test': 'yes' });
      res.end('hello');
    });
    const { gate, calls } = fakeGate(true);
    const mf = createMediatedFetch({ gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: 'read' }]);
    const res = await mf(id, { url: server.url('/hello#frag'), method: 'get' }, never);
    expect(res.status).toBe(201);
    expect(unb64(res.body)).toBe('hello');
    expect(res.headers).toContainEqual(['x-test', 'yes']);
    // the question's preview: the request line, fragment dropped
    expect(calls).toEqual([
      {
        principal: 'test:user',
        kind: 'fetch',
        toolName: 'fetcher',
        revision: id.revision,
        target: server.origin,
        access: 'read',
        requested: true,
        preview: `GET ${server.url('/hello')}`,
      },
    ]);
  });

  it.each([
    ['GET', 'read'],
    ['HEAD', 'read'],
    ['OPTIONS', 'read'],
    ['POST', 'write'],
    ['PUT', 'write'],
    ['DELETE', 'write'],
    ['PATCH', 'write'],
    ['PROPFIND', 'write'],
  ])('%s is %s access', async (method, access) => {
    const { gate, calls } = fakeGate(false);
    const mf = createMediatedFetch({ gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    expect(await codeOf(mf(id, { url: server.url('/x'), method }, never))).toBe('E_CAPABILITY_DENIED');
    expect(calls[0]?.access).toBe(access);
  });

  it('the manifest is the upper bound: a write to a read-only origin is refused without asking', async () => {
    const { gate, calls } = fakeGate(true);
    const mf = createMediatedFetch({ gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: 'read' }]);
    const before = server.requests.length;
    expect(await codeOf(mf(id, { url: server.url('/w'), method: 'POST', body: b64('x') }, never))).toBe(
      'E_CAPABILITY_DENIED',
    );
    expect(await codeOf(mf(id, { url: server.url('/w', OTHER_TEST_HOST) }, never))).toBe('E_CAPABILITY_DENIED');
    // each refusal goes to the gate as requested: false (audited, never asked); even a gate that allows it cannot widen
    // the manifest
    expect(calls.map((c) => [c.access, c.requested, c.preview])).toEqual([
      ['write', false, undefined],
      ['read', false, undefined],
    ]);
    expect(server.requests.length).toBe(before);
  });

  it('a gate denial reaches the tool as E_CAPABILITY_DENIED and nothing is sent', async () => {
    const { gate } = fakeGate(false);
    const mf = createMediatedFetch({ gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    const before = server.connections();
    expect(await codeOf(mf(id, { url: server.url('/denied') }, never))).toBe('E_CAPABILITY_DENIED');
    expect(server.connections()).toBe(before);
  });

  it('refuses forbidden methods and malformed requests with stable codes', async () => {
    const { gate } = fakeGate(true);
    const mf = createMediatedFetch({ gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    expect(await codeOf(mf(id, { url: server.url('/'), method: 'TRACE' }, never))).toBe('E_FETCH_FAILED');
    expect(await codeOf(mf(id, { url: server.url('/'), headers: [['x-a', 'b\r\nInjected: 1']] }, never))).toBe(
      'E_FETCH_FAILED',
    );
    expect(await codeOf(mf(id, { url: 42 }, never))).toBe('E_FETCH_FAILED');
    expect(await codeOf(mf(id, { url: '/relative' }, never))).toBe('E_FETCH_TARGET');
  });

  it('does not let the tool override Host or framing headers', async () => {
    const { gate } = fakeGate(true);
    const mf = createMediatedFetch({ gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    await mf(
      id,
      {
        url: server.url('/host'),
        headers: [
          ['Host', 'metadata.google.internal'],
          ['Proxy-Authorization', 'x'],
          ['X-Ok', '1'],
        ],
      },
      never,
    );
    const seen = server.requests.at(-1);
    expect(seen?.host).toBe(`${TEST_HOST}:${server.port}`);
    expect(seen?.headers['proxy-authorization']).toBeUndefined();
    expect(seen?.headers['x-ok']).toBe('1');
  });
});

describe('responses: redirects, size cap, timeouts, cancellation', () => {
  it('302 to the metadata address comes back as it is; nothing follows it', async () => {
    server.route('/r302', (_q, res) => {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
    });
    const mf = createMediatedFetch({ gate: fakeGate(true).gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    const before = server.requests.length;
    const res = await mf(id, { url: server.url('/r302') }, never);
    expect(res.status).toBe(302);
    expect(res.headers).toContainEqual(['location', 'http://169.254.169.254/latest/meta-data/']);
    expect(server.requests.length).toBe(before + 1);
  });

  it('307 to a loopback address on this very server: the 3xx comes back, the target gets nothing', async () => {
    server.route('/r307', (_q, res) => {
      res.writeHead(307, { location: `https://127.0.0.1:${server.port}/redirect-target` });
      res.end();
    });
    const mf = createMediatedFetch({ gate: fakeGate(true).gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    const res = await mf(id, { url: server.url('/r307'), method: 'POST', body: b64('payload') }, never);
    expect(res.status).toBe(307);
    expect(server.requests.some((r) => r.path === '/redirect-target')).toBe(false);
  });

  const capLimits = { maxBytes: 256 * 1024, timeoutMs: 20_000 };
  const TOTAL = 64 * 1024 * 1024;

  it.each([
    ['absent (chunked)', undefined],
    ['declared larger than the cap', String(TOTAL)],
  ])(
    'Content-Length %s: the connection is closed at the cap, before the server finished writing',
    async (_k, length) => {
      let outcome: Promise<{ finished: boolean; written: number }> | undefined;
      server.route('/big', (_q, res) => {
        res.writeHead(200, length ? { 'content-length': length } : {});
        outcome = streamBytes(res, TOTAL);
      });
      const mf = createMediatedFetch({ gate: fakeGate(true).gate, transport: testTransport(), limits: capLimits });
      const id = await identityFor([{ origin: server.origin, access: '*' }]);
      expect(await codeOf(mf(id, { url: server.url('/big') }, never))).toBe('E_FETCH_TOO_LARGE');
      const o = await outcome!;
      expect(o.finished).toBe(false);
      expect(o.written).toBeLessThan(TOTAL);
    },
  );

  it('Content-Length that lies low: the client never reads past it and the server never finishes', async () => {
    let outcome: Promise<{ finished: boolean; written: number }> | undefined;
    let sock: Socket | undefined;
    server.route('/liar', (q: IncomingMessage, res) => {
      sock = q.socket;
      // Declares 1000 bytes but keeps writing raw bytes onto the socket after the body.
      res.writeHead(200, { 'content-length': '1000' });
      res.write(Buffer.alloc(1000, 0x62));
      outcome = new Promise((resolve) => {
        let written = 0;
        const buf = Buffer.alloc(64 * 1024, 0x63);
        const pump = (): void => {
          while (written < TOTAL) {
            if (q.socket.destroyed) return resolve({ finished: false, written });
            written += buf.length;
            if (!q.socket.write(buf)) return void q.socket.once('drain', pump);
          }
          resolve({ finished: true, written });
        };
        q.socket.once('close', () => resolve({ finished: false, written }));
        pump();
      });
    });
    const mf = createMediatedFetch({ gate: fakeGate(true).gate, transport: testTransport(), limits: capLimits });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    const got = await mf(id, { url: server.url('/liar') }, never).then(
      (r) => Buffer.from(r.body, 'base64').length,
      (e: TyError) => e.code,
    );
    // Either the declared 1000 bytes or a failure; never more than the declared length, never the flood.
    expect(got === 1000 || got === 'E_FETCH_FAILED').toBe(true);
    await Promise.all(transports.splice(0).map((t) => t.close()));
    sock?.destroy();
    // Had the client kept reading, the server would have finished its 64 MiB flood.
    expect((await outcome!).finished).toBe(false);
  });

  it('a slow drip ends with E_TIMEOUT and the server sees the connection closed', async () => {
    let closed: Promise<unknown> | undefined;
    let timer: ReturnType<typeof setInterval> | undefined;
    server.route('/drip', (q, res) => {
      closed = once(q.socket, 'close');
      res.writeHead(200);
      timer = setInterval(() => res.write('x'), 100);
      res.on('close', () => clearInterval(timer));
    });
    const mf = createMediatedFetch({
      gate: fakeGate(true).gate,
      transport: testTransport(),
      limits: { timeoutMs: 600 },
    });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    expect(await codeOf(mf(id, { url: server.url('/drip') }, never))).toBe('E_TIMEOUT');
    await closed;
    clearInterval(timer);
  });

  it.each([
    ['cancelled', 'E_ABORTED', () => new TyError('E_ABORTED', 'cancelled')],
    ['timed out', 'E_TIMEOUT', () => new TyError('E_TIMEOUT', 'call timed out')],
  ])(
    'when the tool call is %s mid-request, the host request is aborted (server sees the close)',
    async (_k, code, reason) => {
      let arrived!: () => void;
      const arrivedP = new Promise<void>((r) => (arrived = r));
      let closed: Promise<unknown> | undefined;
      server.route('/hang', (q) => {
        closed = once(q.socket, 'close');
        arrived();
      });
      const mf = createMediatedFetch({ gate: fakeGate(true).gate, transport: testTransport() });
      const id = await identityFor([{ origin: server.origin, access: '*' }]);
      const call = new AbortController();
      const p = codeOf(mf(id, { url: server.url('/hang') }, call.signal));
      await arrivedP;
      call.abort(reason());
      expect(await p).toBe(code);
      await closed;
    },
  );
});

describe('secrets in header placeholders', () => {
  class MemValues implements SecretValues {
    m = new Map<string, string>();
    async get(n: string) {
      return this.m.get(n);
    }
    async set(n: string, v: string) {
      this.m.set(n, v);
    }
    async delete(n: string) {
      return this.m.delete(n);
    }
    async names() {
      return [...this.m.keys()];
    }
  }
  const VALUE = 'sk-test-5ecret-value-xyz';

  async function setup(): Promise<{
    mf: ReturnType<typeof createMediatedFetch>;
    id: CallerIdentity;
    other: CallerIdentity;
    broker: SecretBroker;
  }> {
    server.route('/echo', (q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(q.headers));
    });
    const grants = new SecretGrants(new Store(new MemoryStoreBackend()));
    const values = new MemValues();
    await values.set('API_TOKEN', VALUE);
    const broker = new SecretBroker(grants, values);
    const caps = [
      { origin: server.origin, access: '*' as const },
      { origin: `https://${OTHER_TEST_HOST}:${server.port}`, access: '*' as const },
    ];
    const id = await identityFor(caps, ['API_TOKEN']);
    await grants.grant('API_TOKEN', { tool: id.name, revision: id.revision, origins: [server.origin] });
    // Another revision under the same name (one more declared origin): no grants.
    const other = await identityFor([...caps, { origin: 'https://api.example.com', access: 'read' }], ['API_TOKEN']);
    const mf = createMediatedFetch({ gate: fakeGate(true).gate, transport: testTransport(), secrets: broker });
    return { mf, id, other, broker };
  }

  it('substitutes the value for the granted origin only; the sandbox never holds it', async () => {
    const { mf, id, broker } = await setup();
    const res = await mf(
      id,
      { url: server.url('/echo'), headers: [['Authorization', 'Bearer {{secret:API_TOKEN}}']] },
      never,
    );
    expect(JSON.parse(unb64(res.body)).authorization).toBe(`Bearer ${VALUE}`);
    // Origin-restricted grant: getSecret is refused, so the value cannot be read into the sandbox.
    const e = await broker.getSecret(id, 'API_TOKEN').catch((x: TyError) => x);
    expect((e as TyError).code).toBe('E_SECRET_DENIED');
    expect((e as TyError).message).not.toContain(VALUE);
  });

  it('refuses the request (nothing sent) when the placeholder targets another origin', async () => {
    const { mf, id } = await setup();
    const before = server.requests.length;
    const err = await mf(
      id,
      { url: server.url('/echo', OTHER_TEST_HOST), headers: [['Authorization', 'Bearer {{secret:API_TOKEN}}']] },
      never,
    ).catch((x: TyError) => x);
    expect((err as TyError).code).toBe('E_SECRET_DENIED');
    expect((err as TyError).message).not.toContain(VALUE);
    expect(server.requests.length).toBe(before);
  });

  it('a revision without a grant cannot use the secret (new revision, same name)', async () => {
    const { mf, other, broker } = await setup();
    const before = server.requests.length;
    expect(
      await codeOf(
        mf(other, { url: server.url('/echo'), headers: [['Authorization', '{{secret:API_TOKEN}}']] }, never),
      ),
    ).toBe('E_SECRET_DENIED');
    expect(await codeOf(broker.getSecret(other, 'API_TOKEN'))).toBe('E_SECRET_DENIED');
    expect(server.requests.length).toBe(before);
  });
});

describe('no ambient credentials', () => {
  let proxy: NetServer;
  let proxyHits = 0;
  const saved: Record<string, string | undefined> = {};
  const PROXY_VARS = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'NO_PROXY', 'no_proxy'];
  beforeAll(async () => {
    proxy = createNetServer((s) => {
      proxyHits++;
      s.destroy();
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    for (const k of PROXY_VARS) saved[k] = process.env[k];
    for (const k of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY'])
      process.env[k] = `http://127.0.0.1:${port}`;
    delete process.env.NO_PROXY;
    delete process.env.no_proxy;
  });
  afterAll(async () => {
    for (const k of PROXY_VARS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    await new Promise<void>((r) => proxy.close(() => r()));
  });

  it('ignores proxy variables in the host environment and keeps no cookies between requests', async () => {
    server.route('/cookie', (_q, res) => {
      res.writeHead(200, { 'set-cookie': 'session=abc; Path=/; Secure' });
      res.end('set');
    });
    server.route('/echo2', (q, res) => {
      res.writeHead(200);
      res.end(JSON.stringify(q.headers));
    });
    const mf = createMediatedFetch({ gate: fakeGate(true).gate, transport: testTransport() });
    const id = await identityFor([{ origin: server.origin, access: '*' }]);
    const first = await mf(id, { url: server.url('/cookie') }, never);
    expect(first.headers).toContainEqual(['set-cookie', 'session=abc; Path=/; Secure']);
    const echoed = JSON.parse(unb64((await mf(id, { url: server.url('/echo2') }, never)).body)) as Record<
      string,
      string
    >;
    expect(echoed.cookie).toBeUndefined();
    expect(echoed['proxy-authorization']).toBeUndefined();
    expect(echoed.authorization).toBeUndefined();
    expect(proxyHits).toBe(0);
  });
});

describe('limits are host-set', () => {
  it('uses 30 s and 16 MiB by default', async () => {
    let seen: FetchLimits | undefined;
    const mf = createMediatedFetch({
      gate: fakeGate(true).gate,
      transport: {
        request: async (r, l) => ((seen = l), { status: 200, statusText: 'OK', headers: [], body: '', url: r.url }),
      },
    });
    const id = await identityFor([{ origin: 'https://api.example.com', access: '*' }]);
    await mf(id, { url: 'https://api.example.com/' }, never);
    expect(seen).toEqual({ timeoutMs: 30_000, maxBytes: 16 * 1024 * 1024 });
  });
});
