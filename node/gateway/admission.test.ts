// Admission control: limits from the descriptor limit, the raw 429 of a connection beyond the limit (an answer, never
// a reset), in-flight and session places per principal, aggregate refusal records; test side.
import { describe, expect, it } from 'vitest';
import { createServer as createHttpServer, request } from 'node:http';
import { connect } from 'node:net';
import type { AuditRecord } from '../../core/audit/trail.js';
import { Admission, defaultLimits, requestComplete } from './admission.js';

describe('limits', () => {
  it('sockets never take more than the descriptor limit minus a reserve; calls and sessions follow', () => {
    const l = defaultLimits(1024);
    expect(l.maxConnections + l.refusedHeld + 256).toBeLessThanOrEqual(1024);
    expect(l.maxInFlight).toBe(Math.floor(l.maxConnections / 2));
    expect(l.maxInFlightPerPrincipal).toBeLessThan(l.maxInFlight);
    expect(defaultLimits(65_536).backlog).toBe(4096);
    expect(defaultLimits(1_048_576).maxConnections).toBe(10_000);
  });
  it('a request is complete once its head and content-length (or last chunk) are in', () => {
    const head = 'POST / HTTP/1.1\r\nHost: x\r\n';
    expect(requestComplete(Buffer.from(`${head}Content-Length: 5\r\n\r\nabc`))).toBe(false);
    expect(requestComplete(Buffer.from(`${head}Content-Length: 5\r\n\r\nabcde`))).toBe(true);
    expect(requestComplete(Buffer.from(`${head}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n`))).toBe(false);
    expect(requestComplete(Buffer.from(`${head}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`))).toBe(true);
    expect(requestComplete(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'))).toBe(true);
    expect(requestComplete(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n'))).toBe(false);
  });
});

describe('the connection limit', () => {
  it('beyond it a connection gets a whole 429 E_BUSY answer with Retry-After and a clean close, its request read', async () => {
    const refused: string[] = [];
    const admission = new Admission({ maxConnections: 1 }, { refused: (r) => refused.push(r) });
    const http = createHttpServer((_req, res) => setTimeout(() => res.end('ok'), 300));
    const front = admission.listener(http);
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    const port = (front.address() as { port: number }).port;
    try {
      const first = new Promise<number>((resolve) =>
        request({ port, host: '127.0.0.1', method: 'POST', agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        }).end('{}'),
      );
      await new Promise((r) => setTimeout(r, 50));
      // a raw client: the answer arrives whole, then the end of the stream (no reset)
      const raw = await new Promise<{ text: string; error?: string }>((resolve) => {
        const s = connect(port, '127.0.0.1');
        let text = '';
        s.on('data', (d) => (text += String(d)));
        s.on('end', () => resolve({ text }));
        s.on('error', (e) => resolve({ text, error: (e as { code?: string }).code }));
        s.write('POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
      });
      expect(raw.error).toBeUndefined();
      expect(raw.text).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\n/);
      expect(raw.text).toContain('retry-after: 1\r\n');
      expect(raw.text).toContain('connection: close\r\n');
      expect(JSON.parse(raw.text.slice(raw.text.indexOf('\r\n\r\n') + 4)).error.data.code).toBe('E_BUSY');
      expect(await first).toBe(200);
      expect(refused).toEqual(['connections']);
    } finally {
      await new Promise<void>((r) => front.close(() => r()));
    }
  });
});

describe('places per principal', () => {
  it('in-flight and session places are per principal and per server; releasing twice frees one place', () => {
    const a = new Admission({ maxInFlight: 3, maxInFlightPerPrincipal: 2, maxSessions: 3, maxSessionsPerPrincipal: 1 });
    const x1 = a.enter('user:x');
    const x2 = a.enter('user:x');
    expect(a.enter('user:x')).toEqual({ ok: false, reason: 'principal-calls' });
    const y1 = a.enter('user:y');
    expect(a.enter('user:z')).toEqual({ ok: false, reason: 'calls' });
    if (!x1.ok || !x2.ok || !y1.ok) throw new Error('admitted expected');
    x1.release();
    x1.release();
    expect(a.inFlight).toBe(2);
    expect(a.enter('user:x').ok).toBe(true);
    const s = a.openSession('user:x');
    expect(a.openSession('user:x')).toEqual({ ok: false, reason: 'principal-sessions' });
    expect(a.openSession('user:y').ok).toBe(true);
    if (s.ok) s.release();
    expect(a.sessionsOf('user:x')).toBe(0);
  });
  it('refusals become one audit record per principal per interval, with the counts by reason', async () => {
    const records: AuditRecord[] = [];
    let now = 0;
    const a = new Admission({}, { audit: async (r) => void records.push(r), clock: () => now });
    for (let i = 0; i < 500; i++) a.refuse('principal-calls', 'user:flood');
    a.refuse('connections', 'unauthenticated');
    now = 60_000;
    await a.flush();
    await a.flush();
    expect(records).toHaveLength(2);
    expect(records.find((r) => r.principal === 'user:flood')).toMatchObject({
      kind: 'admission',
      outcome: 'denied',
      code: 'E_BUSY',
      target: '500 request(s) refused in 60 s: principal-calls 500',
    });
    await a.close();
  });
});
