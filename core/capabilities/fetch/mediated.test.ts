// Unit tests for the mediated fetch pipeline with fake transports (order of checks, bounds, limits); core, trusted
// side.
import { describe, expect, it } from 'vitest';
import type { ToolManifest } from '../../../protocol/manifest.js';
import type { Gate, GateRequest } from '../../exec/runtime.js';
import {
  accessOf,
  createMediatedFetch,
  manifestAllowsFetch,
  originMatches,
  parseFetchRequest,
  type CallerIdentity,
  type FetchTransport,
  type TransportRequest,
} from './mediated.js';
import { codeOf } from '../../../test/helpers/errors.js';
import { OriginPatternSchema } from '../../../protocol/manifest.js';
import { FetchRequestSchema } from '../../../protocol/wire.js';

const never = new AbortController().signal;
const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';

function id(fetch: NonNullable<ToolManifest['capabilities']>['fetch']): CallerIdentity {
  const manifest: ToolManifest = {
    name: 't',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'x' },
    capabilities: { fetch },
  };
  return { name: 't', revision: REV, manifest, principal: 'p' };
}

function recorder(): { transport: FetchTransport; seen: TransportRequest[] } {
  const seen: TransportRequest[] = [];
  return {
    seen,
    transport: {
      async request(r) {
        seen.push(r);
        return { status: 200, statusText: 'OK', headers: [], body: '', url: r.url };
      },
    },
  };
}

const allowAll = (calls: GateRequest[] = []): Gate => ({
  async authorize(r) {
    calls.push(r);
  },
  async run() {
    throw new Error('unused');
  },
});

describe('origin patterns', () => {
  it.each([
    ['https://api.example.com', 'https://api.example.com', true],
    ['https://api.example.com', 'https://API.example.com', true],
    ['https://api.example.com', 'https://api.example.com:443', true],
    ['https://api.example.com', 'https://api.example.com:8443', false],
    ['https://api.example.com:8443', 'https://api.example.com:8443', true],
    ['https://*.example.com', 'https://a.b.example.com', true],
    ['https://*.example.com', 'https://example.com', false],
    ['https://*.example.com', 'https://badexample.com', false],
    ['https://*.example.com', 'https://a.example.com.evil.io', false],
    ['https://api.example.com', 'http://api.example.com', false],
    ['https://[2606:4700::1111]', 'https://[2606:4700:0:0::1111]', true],
    ['https://[2606:4700::1111]:8443', 'https://[2606:4700::1111]:8443', true],
    ['https://[2606:4700::1111]', 'https://[2606:4700::1112]', false],
  ])('%s vs %s -> %s', (p, o, want) => {
    expect(originMatches(p, new URL(o).origin)).toBe(want);
  });
  it('a manifest may request an IPv6 literal origin, and nothing looser', () => {
    expect(OriginPatternSchema.safeParse('https://[2606:4700::1111]').success).toBe(true);
    expect(OriginPatternSchema.safeParse('https://[2606:4700::1111]:8443').success).toBe(true);
    for (const bad of [
      'https://[2606:4700::1111',
      'https://*.[::1]',
      'https://[::1]/x',
      'http://[::1]',
      'https://[zz::1]',
    ]) {
      expect(OriginPatternSchema.safeParse(bad).success, bad).toBe(false);
    }
  });
  it('access classes', () => {
    expect(['GET', 'HEAD', 'OPTIONS'].map(accessOf)).toEqual(['read', 'read', 'read']);
    expect(['POST', 'PUT', 'PATCH', 'DELETE', 'MKCOL'].map(accessOf)).toEqual([
      'write',
      'write',
      'write',
      'write',
      'write',
    ]);
    expect(
      manifestAllowsFetch(id([{ origin: 'https://a.example', access: '*' }]).manifest, 'https://a.example', 'write'),
    ).toBe(true);
    expect(
      manifestAllowsFetch(id([{ origin: 'https://a.example', access: 'read' }]).manifest, 'https://a.example', 'write'),
    ).toBe(false);
  });
  it('parsed patterns are cached by their text: the manifest as it is at each request decides, through the pipeline too', async () => {
    const caller = id([{ origin: 'https://a.example', access: 'read' }]);
    const fetchCaps = caller.manifest.capabilities?.fetch ?? [];
    expect(manifestAllowsFetch(caller.manifest, 'https://a.example', 'read')).toBe(true);
    (fetchCaps[0] as { origin: string }).origin = 'https://b.example';
    expect(manifestAllowsFetch(caller.manifest, 'https://a.example', 'read')).toBe(false);
    expect(manifestAllowsFetch(caller.manifest, 'https://b.example', 'read')).toBe(true);
    const r = recorder();
    const mf = createMediatedFetch({ gate: allowAll(), transport: r.transport });
    expect(await codeOf(mf(caller, { url: 'https://a.example/' }, never))).toBe('E_CAPABILITY_DENIED');
    expect(await codeOf(mf(caller, { url: 'https://b.example/' }, never))).toBe('no error');
    expect(r.seen.map((q) => q.url)).toEqual(['https://b.example/']);
  });
});

describe('pipeline order', () => {
  it.each([
    ['http://user:pw@127.0.0.1/', 'E_FETCH_SCHEME'],
    ['https://user:pw@127.0.0.1/', 'E_FETCH_CREDENTIALS'],
    ['https://:pw@example.com/', 'E_FETCH_CREDENTIALS'],
    ['https://127.0.0.1/', 'E_FETCH_TARGET'],
    ['ftp://example.com/', 'E_FETCH_SCHEME'],
    ['javascript:alert(1)', 'E_FETCH_SCHEME'],
    ['blob:https://example.com/x', 'E_FETCH_SCHEME'],
    ['not a url', 'E_FETCH_TARGET'],
    ['https://ｌｏｃａｌｈｏｓｔ/', 'E_FETCH_TARGET'],
    ['https://127。0。0。1/', 'E_FETCH_TARGET'],
    ['https://%31%32%37.0.0.1/', 'E_FETCH_TARGET'],
    ['https://metadata.google.internal%2E/', 'E_FETCH_TARGET'],
    ['HTTPS://[::FFFF:7F00:1]/', 'E_FETCH_TARGET'],
  ])('%s -> %s, before the gate', async (url, code) => {
    const calls: GateRequest[] = [];
    const r = recorder();
    const mf = createMediatedFetch({ gate: allowAll(calls), transport: r.transport });
    expect(await codeOf(mf(id([{ origin: 'https://example.com', access: '*' }]), { url }, never))).toBe(code);
    expect(calls).toHaveLength(0);
    expect(r.seen).toHaveLength(0);
  });

  it('refuses without a resolved revision identity', async () => {
    const r = recorder();
    const mf = createMediatedFetch({ gate: allowAll(), transport: r.transport });
    const bad = { ...id([{ origin: 'https://example.com', access: '*' }]), revision: '' };
    expect(await codeOf(mf(bad, { url: 'https://example.com/' }, never))).toBe('E_CAPABILITY_DENIED');
    expect(r.seen).toHaveLength(0);
  });

  it("drops host-owned headers, keeps the tool's own, strips the fragment, sends no body on GET", async () => {
    const r = recorder();
    const mf = createMediatedFetch({ gate: allowAll(), transport: r.transport });
    await mf(
      id([{ origin: 'https://example.com', access: '*' }]),
      {
        url: 'https://example.com/p?q=1#frag',
        headers: [
          ['Host', 'evil'],
          ['Transfer-Encoding', 'chunked'],
          ['Proxy-X', '1'],
          ['Authorization', 'Bearer own'],
          ['X-A', 'b'],
        ],
        body: 'AAAA',
      },
      never,
    );
    expect(r.seen[0]).toEqual({
      url: 'https://example.com/p?q=1',
      method: 'GET',
      headers: [
        ['Authorization', 'Bearer own'],
        ['X-A', 'b'],
      ],
    });
  });

  it('refuses placeholders when the host has no secrets service', async () => {
    const r = recorder();
    const mf = createMediatedFetch({ gate: allowAll(), transport: r.transport });
    expect(
      await codeOf(
        mf(
          id([{ origin: 'https://example.com', access: '*' }]),
          { url: 'https://example.com/', headers: [['A', '{{secret:X}}']] },
          never,
        ),
      ),
    ).toBe('E_SECRET_DENIED');
    expect(r.seen).toHaveLength(0);
  });
});

describe('a transport error that echoes the request (finding 1 of issue 26)', () => {
  it('has the secret values filled into this request withheld as tokens; the rest of its text and code kept', async () => {
    const value = 'hdr-value-42x';
    const echo: FetchTransport = {
      async request(r) {
        throw Object.assign(new Error(`invalid header: ${r.headers.map(([k, v]) => `${k}: ${v}`).join(', ')}`), {
          code: 'E_FETCH_FAILED',
        });
      },
    };
    const secrets = {
      async substitute(_i: CallerIdentity, _o: string, headers: [string, string][], used?: string[]) {
        used?.push(value);
        return headers.map(([k, v]): [string, string] => [k, v.replace('{{secret:TOK}}', value)]);
      },
    };
    const mf = createMediatedFetch({ gate: allowAll(), transport: echo, secrets });
    let err: unknown;
    try {
      await mf(
        id([{ origin: 'https://example.com', access: '*' }]),
        { url: 'https://example.com/', headers: [['Authorization', 'Bearer {{secret:TOK}}']] },
        never,
      );
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'E_FETCH_FAILED', message: 'invalid header: Authorization: Bearer <withheld>' });
  });
});

describe('limits without transport cooperation', () => {
  const hung: FetchTransport = { request: () => new Promise(() => {}) };
  it('the core timeout ends a request even if the transport ignores its signal', async () => {
    const mf = createMediatedFetch({ gate: allowAll(), transport: hung, limits: { timeoutMs: 50 } });
    expect(
      await codeOf(mf(id([{ origin: 'https://example.com', access: '*' }]), { url: 'https://example.com/' }, never)),
    ).toBe('E_TIMEOUT');
  });
  it('cancellation ends it too, and the transport signal is aborted', async () => {
    let got: AbortSignal | undefined;
    const mf = createMediatedFetch({
      gate: allowAll(),
      transport: { request: (_r, _l, s) => ((got = s), new Promise(() => {})) },
    });
    const ac = new AbortController();
    const p = codeOf(
      mf(id([{ origin: 'https://example.com', access: '*' }]), { url: 'https://example.com/' }, ac.signal),
    );
    await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    expect(await p).toBe('E_ABORTED');
    expect(got?.aborted).toBe(true);
  });
  it('a malformed transport answer is E_FETCH_FAILED', async () => {
    const mf = createMediatedFetch({
      gate: allowAll(),
      transport: { request: async () => ({ status: 'x' }) as never },
    });
    expect(
      await codeOf(mf(id([{ origin: 'https://example.com', access: '*' }]), { url: 'https://example.com/' }, never)),
    ).toBe('E_FETCH_FAILED');
  });
});

describe('fetch request parsing', () => {
  it('the fast parse accepts and refuses exactly what FetchRequestSchema does, with the same result', async () => {
    const long = (n: number) => 'a'.repeat(n);
    const inputs: unknown[] = [
      { url: 'https://a.example/x' },
      {
        url: 'https://a.example/x',
        method: 'post',
        headers: [
          ['x-a', '1'],
          ['x-b', ''],
        ],
        body: 'AAEC',
      },
      { url: long(8192) },
      { url: long(8193) },
      { url: 'https://a.example', method: 'GE T' },
      { url: 'https://a.example', method: long(16) },
      { url: 'https://a.example', method: long(17) },
      { url: 'https://a.example', method: '' },
      { url: 'https://a.example', headers: [['a', 'b', 'c']] },
      { url: 'https://a.example', headers: [['a']] },
      { url: 'https://a.example', headers: [[1, 'b']] },
      { url: 'https://a.example', headers: [[long(256), long(16384)]] },
      { url: 'https://a.example', headers: [[long(257), 'v']] },
      { url: 'https://a.example', headers: [['n', long(16385)]] },
      { url: 'https://a.example', headers: Array.from({ length: 128 }, () => ['a', 'b']) },
      { url: 'https://a.example', headers: Array.from({ length: 129 }, () => ['a', 'b']) },
      { url: 'https://a.example', headers: {} },
      { url: 'https://a.example', body: 5 },
      { url: 'https://a.example', extra: 1 },
      { url: 'https://a.example', body: undefined },
      { url: 1 },
      {},
      null,
      [],
      'https://a.example',
      7,
      { url: 'https://a.example', method: 1 },
      { url: 'https://a.example', headers: null },
    ];
    for (const raw of inputs) {
      const a = await parseFetchRequest(raw);
      const b = FetchRequestSchema.safeParse(raw);
      expect(a.success, JSON.stringify(raw)?.slice(0, 80)).toBe(b.success);
      if (a.success && b.success) expect(a.data).toEqual(b.data);
    }
  });
});
