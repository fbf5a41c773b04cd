// The Node fetch transport on its own (no mediated pipeline): waits that end before a connection exists, 1xx answers,
// body and header framing; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TyError } from '../../core/errors.js';
import { DEFAULT_FETCH_LIMITS, type FetchLimits } from '../../core/capabilities/fetch/mediated.js';
import { NodeFetchTransport } from '../../node/fetch.js';
import { startHttpsServer, type TestHttpsServer } from '../helpers/https-server.js';
import { codeOf } from '../helpers/errors.js';

let server: TestHttpsServer;
const transports: NodeFetchTransport[] = [];

function transport(resolve: (h: string) => Promise<string[]> = async () => ['127.0.0.1']): NodeFetchTransport {
  const t = new NodeFetchTransport({ ca: server.ca, unsafeTestHooks: { resolve, allowAddresses: ['127.0.0.1'] } });
  transports.push(t);
  return t;
}

const never = new AbortController().signal;
const limits = (o: Partial<FetchLimits> = {}): FetchLimits => ({ ...DEFAULT_FETCH_LIMITS, ...o });
/** A name resolution that never answers: the request stays queued, with no connection, until it is ended. */
const hangingDns = (): Promise<string[]> => new Promise(() => {});

beforeAll(async () => {
  server = await startHttpsServer();
});
afterAll(async () => {
  for (const t of transports) await t.close();
  await server.close();
});

describe('NodeFetchTransport before a connection exists', () => {
  it("a cancellation while the name is still resolving ends the request at once with the reason's code", async () => {
    const t = transport(hangingDns);
    const ac = new AbortController();
    const p = codeOf(t.request({ url: server.url('/'), method: 'GET', headers: [] }, limits(), ac.signal));
    await new Promise((r) => setTimeout(r, 20));
    ac.abort(new TyError('E_ABORTED', 'cancelled'));
    expect(await p).toBe('E_ABORTED');
    expect(server.connections()).toBe(0);
  });

  it('a signal already aborted refuses before anything is sent', async () => {
    const t = transport();
    const ac = new AbortController();
    ac.abort();
    const before = server.requests.length;
    expect(await codeOf(t.request({ url: server.url('/'), method: 'GET', headers: [] }, limits(), ac.signal))).toBe(
      'E_ABORTED',
    );
    expect(server.requests.length).toBe(before);
  });

  it('its own timeout ends a request stuck before connecting (E_TIMEOUT), with no signal from the caller', async () => {
    const t = transport(hangingDns);
    expect(
      await codeOf(t.request({ url: server.url('/'), method: 'GET', headers: [] }, limits({ timeoutMs: 150 }), never)),
    ).toBe('E_TIMEOUT');
  });
});

describe('NodeFetchTransport answers', () => {
  it('a 103 Early Hints before the answer: the final status, headers and body come back', async () => {
    server.route('/hints', (_q, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      res.writeHead(201, 'Made', { 'content-type': 'text/plain', 'x-one': 'a' });
      res.end('final');
    });
    const r = await transport().request({ url: server.url('/hints'), method: 'GET', headers: [] }, limits(), never);
    expect(r.status).toBe(201);
    expect(r.statusText).toBe('Made');
    expect(r.headers).toContainEqual(['x-one', 'a']);
    expect(r.headers.some(([k]) => k === 'link')).toBe(false);
    expect(Buffer.from(r.body, 'base64').toString()).toBe('final');
    expect(r.url).toBe(server.url('/hints'));
  });

  it('repeated response headers each come back; a body of many chunks is whole and in order', async () => {
    const want = Buffer.alloc(300 * 1024);
    for (let i = 0; i < want.length; i++) want[i] = (i * 7 + (i >> 10)) % 251;
    server.route('/many', (_q, res) => {
      res.writeHead(200, [
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
        ['content-type', 'application/octet-stream'],
      ]);
      let at = 0;
      // Separate writes a tick apart, so the client sees many chunks.
      const next = (): void => {
        if (at >= want.length) return void res.end();
        res.write(want.subarray(at, at + 16 * 1024));
        at += 16 * 1024;
        setImmediate(next);
      };
      next();
    });
    const r = await transport().request({ url: server.url('/many'), method: 'GET', headers: [] }, limits(), never);
    expect(r.headers.filter(([k]) => k === 'set-cookie')).toEqual([
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ]);
    expect(Buffer.from(r.body, 'base64').equals(want)).toBe(true);
  });

  it('a POST body (base64 on the wire) reaches the server byte for byte and comes back', async () => {
    let got: Buffer | undefined;
    server.route('/echo', (_q, res, body) => {
      got = body;
      res.writeHead(200);
      res.end(body);
    });
    const bytes = Buffer.from([0, 1, 2, 250, 255, 10, 13]);
    const r = await transport().request(
      {
        url: server.url('/echo'),
        method: 'POST',
        headers: [['content-type', 'application/octet-stream']],
        body: bytes.toString('base64'),
      },
      limits(),
      never,
    );
    expect(got?.equals(bytes)).toBe(true);
    expect(Buffer.from(r.body, 'base64').equals(bytes)).toBe(true);
  });

  it('sequential GETs reuse kept-alive connections (20 requests, at most 2 connections)', async () => {
    const t = transport();
    const before = server.connections();
    for (let i = 0; i < 20; i++)
      expect((await t.request({ url: server.url('/'), method: 'GET', headers: [] }, limits(), never)).status).toBe(200);
    expect(server.connections() - before).toBeLessThanOrEqual(2);
  });
});
