// Server-sent events parser (text/event-stream) over a fetch body stream; browser app, trusted side.

export interface SseEvent {
  /** The `event:` field, `message` when absent. */
  event: string;
  /** The `data:` lines joined with LF. */
  data: string;
  id?: string;
}

/**
 * Parse a `text/event-stream` body into events, as the WHATWG HTML Living Standard §9.2.6 "Interpreting an
 * event stream" says: UTF-8 decoding, lines end in CRLF, LF or CR, a leading BOM is skipped, `:` lines are
 * comments, one optional space after the colon is dropped, an empty line dispatches (an event with no data
 * is not dispatched), a final unterminated event is dropped. `maxEventBytes` (default 8 MiB) bounds one
 * event, so a peer cannot grow memory without end.
 * @throws Error when one event exceeds maxEventBytes.
 */
export async function* parseSse(
  body: ReadableStream<Uint8Array>,
  opts: { maxEventBytes?: number } = {},
): AsyncGenerator<SseEvent> {
  const max = opts.maxEventBytes ?? 8 * 1024 * 1024;
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8');
  let buf = '';
  let first = true;
  let data: string[] = [];
  let size = 0;
  let event = '';
  let id: string | undefined;
  const line = (l: string): SseEvent | undefined => {
    if (l === '') {
      const out =
        data.length > 0
          ? { event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) }
          : undefined;
      data = [];
      size = 0;
      event = '';
      return out;
    }
    if (l.startsWith(':')) return undefined;
    const c = l.indexOf(':');
    const field = c === -1 ? l : l.slice(0, c);
    let value = c === -1 ? '' : l.slice(c + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      size += value.length + 1;
      if (size > max) throw new Error(`an event of the stream is larger than ${max} bytes`);
      data.push(value);
    } else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) id = value;
    return undefined;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        // A CR at the very end is a complete line end after all.
        if (buf.endsWith('\r')) {
          const ev = line(buf.slice(0, -1));
          if (ev) yield ev;
        }
        break;
      }
      buf += decoder.decode(value, { stream: true });
      if (first && buf.length > 0) {
        if (buf.charCodeAt(0) === 0xfeff) buf = buf.slice(1);
        first = false;
      }
      let start = 0;
      for (let i = 0; i < buf.length; i++) {
        const ch = buf.charCodeAt(i);
        if (ch !== 10 && ch !== 13) continue;
        // A CR at the end of the buffer may be the first half of CRLF: wait for more.
        if (ch === 13 && i === buf.length - 1) break;
        const ev = line(buf.slice(start, i));
        if (ch === 13 && buf.charCodeAt(i + 1) === 10) i++;
        start = i + 1;
        if (ev) yield ev;
      }
      buf = buf.slice(start);
      if (buf.length > max) throw new Error(`a line of the stream is longer than ${max} bytes`);
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
