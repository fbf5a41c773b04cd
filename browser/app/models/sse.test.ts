// Unit tests of the SSE parser against the WHATWG event-stream rules; test code.
import { describe, expect, it } from 'vitest';
import { parseSse } from './sse.js';

function streamOf(parts: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(typeof p === 'string' ? enc.encode(p) : p);
      c.close();
    },
  });
}

async function all(parts: (string | Uint8Array)[], opts?: { maxEventBytes?: number }) {
  const out = [];
  for await (const e of parseSse(streamOf(parts), opts)) out.push(e);
  return out;
}

describe('parseSse (WHATWG HTML §9.2.6)', () => {
  it('dispatches on blank lines, joins data lines with LF, keeps event names and ids', async () => {
    expect(await all(['event: a\ndata: x\ndata:  y\nid: 7\n\ndata: z\n\n'])).toEqual([
      { event: 'a', data: 'x\n y', id: '7' },
      { event: 'message', data: 'z', id: '7' },
    ]);
  });
  it('accepts CRLF and CR line ends, even split across chunks, and skips a BOM and comments', async () => {
    expect(await all(['\ufeff: comment\r', '\ndata: one\r', '\n\r', '\ndata: two\r\r'])).toEqual([
      { event: 'message', data: 'one' },
      { event: 'message', data: 'two' },
    ]);
  });
  it('decodes UTF-8 split inside a code point, drops an unterminated last event and events without data', async () => {
    const bytes = new TextEncoder().encode('data: é€\n\n');
    expect(await all([bytes.slice(0, 7), bytes.slice(7), 'event: x\n\n', 'data: partial'])).toEqual([
      { event: 'message', data: 'é€' },
    ]);
  });
  it('refuses an event larger than the bound', async () => {
    await expect(
      all([`data: ${'x'.repeat(100)}\n`, `data: ${'x'.repeat(100)}\n\n`], { maxEventBytes: 150 }),
    ).rejects.toThrow(/larger than 150 bytes/);
  });
});
