// Scripted model servers for the chat app's tests: faithful loopback peers of the OpenAI Chat Completions and Anthropic
// Messages wire formats; test code.
// They speak each API's HTTP+SSE framing as documented (OpenAI: `data: {chunk}` lines with choices[0].delta content and
// tool_calls deltas merged by index, ending with `data: [DONE]`; Anthropic: named events message_start,
// content_block_start/delta/stop with text_delta and input_json_delta, message_delta, message_stop), answer CORS
// preflights
// like a server configured for browser access, and record every request so tests can check what the app sent.
// Like the real APIs they refuse a history with a tool call that has no result (HTTP 400, the provider's error shape:
// historyError), and they can be scripted to fail: any status with Retry-After, a stream cut mid-way, a paced stream.
import { createServer } from 'node:http';

/**
 * @typedef {{ name: string, arguments: object | string }} ScriptedCall
 * @typedef {{ text?: string, toolCalls?: ScriptedCall[], hang?: boolean, status?: number, stream?: boolean,
 *   retryAfter?: string, errorMessage?: string, cut?: boolean, pace?: { tokens: number, everyMs: number } }}
 *   ScriptedReply
 * @typedef {{ path: string, headers: Record<string, string | string[] | undefined>, body: any,
 *   rejected?: string }} RecordedRequest
 */

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers':
    'authorization, content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, accept',
  'access-control-expose-headers': 'retry-after',
  'access-control-max-age': '600',
};

/**
 * Why the provider would refuse this request's history (HTTP 400), or undefined. OpenAI Chat Completions: every
 * `tool_calls[].id` of an assistant message must be answered by `role: "tool"` messages right after it, and a tool
 * message must answer a call of the assistant message before it. Anthropic Messages: the first message is the user's,
 * roles alternate, every `tool_use` id has a `tool_result` in the very next user message (and no result answers an
 * unknown id), and a final assistant message does not end in whitespace. Messages follow the providers' own wording.
 */
export function historyError(kind, body) {
  const msgs = Array.isArray(body?.messages) ? body.messages : [];
  if (kind === 'openai') {
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i];
      if (m.role === 'tool') {
        let j = i - 1;
        while (j >= 0 && msgs[j].role === 'tool') j--;
        const ids = (msgs[j]?.role === 'assistant' && msgs[j].tool_calls ? msgs[j].tool_calls : []).map((c) => c.id);
        if (!ids.includes(m.tool_call_id))
          return (
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with " +
            "'tool_calls'."
          );
      }
      if (m.role !== 'assistant' || !Array.isArray(m.tool_calls) || m.tool_calls.length === 0) continue;
      const answered = new Set();
      for (let j = i + 1; j < msgs.length && msgs[j].role === 'tool'; j++) answered.add(msgs[j].tool_call_id);
      const missing = m.tool_calls.map((c) => c.id).filter((id) => !answered.has(id));
      if (missing.length)
        return (
          "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
          `'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`
        );
    }
    return undefined;
  }
  if (msgs[0]?.role !== 'user') return 'messages: first message must use the "user" role';
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (i > 0 && msgs[i - 1].role === m.role) return 'messages: roles must alternate between "user" and "assistant"';
    const blocks = Array.isArray(m.content) ? m.content : [{ type: 'text', text: m.content }];
    const prev = i > 0 && Array.isArray(msgs[i - 1].content) ? msgs[i - 1].content : [];
    const uses = prev.filter((b) => b.type === 'tool_use').map((b) => b.id);
    for (const b of blocks)
      if (b.type === 'tool_result' && !uses.includes(b.tool_use_id))
        return (
          `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. ` +
          'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.'
        );
    if (m.role !== 'assistant') continue;
    const ids = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id);
    const next = msgs[i + 1];
    const results = new Set(
      (next && Array.isArray(next.content) ? next.content : [])
        .filter((b) => b.type === 'tool_result')
        .map((b) => b.tool_use_id),
    );
    const missing = ids.filter((id) => !results.has(id));
    if (missing.length)
      return (
        `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ` +
        `${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next ` +
        'message.'
      );
    const last = blocks[blocks.length - 1];
    if (i === msgs.length - 1 && last?.type === 'text' && /\s$/.test(last.text))
      return 'messages: final assistant content cannot end with trailing whitespace';
  }
  return undefined;
}

/** Send `text` as `pace.tokens` words (with their spaces) every `pace.everyMs` ms; resolves at the end. */
function paced(text, pace, send, isOpen) {
  const tokens = text.match(/\S+\s*|\s+/g) ?? [];
  return new Promise((resolve) => {
    let i = 0;
    const tick = () => {
      if (!isOpen()) return resolve();
      const piece = tokens.slice(i, i + pace.tokens).join('');
      i += pace.tokens;
      if (piece) send(piece);
      if (i >= tokens.length) return resolve();
      setTimeout(tick, pace.everyMs);
    };
    tick();
  });
}

/** Split a string into `n` roughly equal pieces (to exercise delta merging). */
function pieces(s, n = 3) {
  if (s.length <= 1) return [s];
  const size = Math.ceil(s.length / n);
  const out = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

const argText = (a) => (typeof a === 'string' ? a : JSON.stringify(a));

/** @param {import('node:http').ServerResponse} res @param {ScriptedReply} r @param {number} n */
async function openaiStream(res, r, n) {
  res.writeHead(200, { ...CORS, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const id = `chatcmpl-${n}`;
  const send = (delta, finish = null) =>
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'scripted', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
    );
  send({ role: 'assistant', content: '' });
  if (r.pace)
    await paced(
      r.text ?? '',
      r.pace,
      (p) => send({ content: p }),
      () => !res.destroyed,
    );
  else for (const p of pieces(r.text ?? '', 4)) if (p) send({ content: p });
  if (r.hang) return; // keeps the stream open until the client goes away
  if (r.cut) return void setTimeout(() => res.socket?.destroy(), 50); // the connection drops mid-answer
  (r.toolCalls ?? []).forEach((c, index) => {
    const [first, ...rest] = pieces(argText(c.arguments), 2);
    send({
      tool_calls: [
        {
          index,
          id: `call_scripted_${n}_${index}`,
          type: 'function',
          function: { name: c.name, arguments: first ?? '' },
        },
      ],
    });
    for (const p of rest) send({ tool_calls: [{ index, function: { arguments: p } }] });
  });
  send({}, r.toolCalls?.length ? 'tool_calls' : 'stop');
  res.end('data: [DONE]\n\n');
}

function openaiJson(res, r, n) {
  const message = { role: 'assistant', content: r.text ?? null };
  if (r.toolCalls?.length)
    message.tool_calls = r.toolCalls.map((c, i) => ({
      id: `call_scripted_${n}_${i}`,
      type: 'function',
      function: { name: c.name, arguments: argText(c.arguments) },
    }));
  res.writeHead(200, { ...CORS, 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: `chatcmpl-${n}`,
      object: 'chat.completion',
      created: 0,
      model: 'scripted',
      choices: [{ index: 0, message, finish_reason: r.toolCalls?.length ? 'tool_calls' : 'stop' }],
    }),
  );
}

async function anthropicStream(res, r, n) {
  res.writeHead(200, { ...CORS, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev('message_start', {
    message: {
      id: `msg_${n}`,
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'scripted',
      stop_reason: null,
      usage: { input_tokens: 1, output_tokens: 0 },
    },
  });
  ev('ping', {});
  let index = 0;
  if (r.text) {
    ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
    const delta = (p) => ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } });
    if (r.pace) await paced(r.text, r.pace, delta, () => !res.destroyed);
    else for (const p of pieces(r.text, 4)) delta(p);
    if (r.hang) return;
    if (r.cut) return void setTimeout(() => res.socket?.destroy(), 50);
    ev('content_block_stop', { index });
    index++;
  }
  for (const c of r.toolCalls ?? []) {
    ev('content_block_start', {
      index,
      content_block: { type: 'tool_use', id: `toolu_scripted_${n}_${index}`, name: c.name, input: {} },
    });
    for (const p of pieces(argText(c.arguments), 2))
      ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } });
    ev('content_block_stop', { index });
    index++;
  }
  ev('message_delta', {
    delta: { stop_reason: r.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: 1 },
  });
  ev('message_stop', {});
  res.end();
}

/**
 * Start a scripted model server on 127.0.0.1 (ephemeral port).
 * @param {{ kind: 'openai' | 'anthropic', script: (body: any, n: number, req: RecordedRequest) => ScriptedReply }} opts
 *   `script` gets the parsed request body and the request's number (0-based) and returns the reply.
 * @returns {Promise<{ url: string, origin: string, requests: RecordedRequest[], close(): Promise<void> }>}
 *   `url` is the endpoint a person would type (OpenAI: `<origin>/v1`; Anthropic: `<origin>`).
 */
export async function startScriptedModel(opts) {
  /** @type {RecordedRequest[]} */
  const requests = [];
  const server = createServer((req, res) => {
    if (req.method === 'OPTIONS') {
      res.writeHead(204, CORS).end();
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400, CORS).end('{"error":{"message":"body is not JSON"}}');
        return;
      }
      const rec = { path, headers: req.headers, body };
      requests.push(rec);
      const bad = historyError(opts.kind, body);
      if (bad) {
        rec.rejected = bad;
        res
          .writeHead(400, { ...CORS, 'content-type': 'application/json' })
          .end(
            JSON.stringify(
              opts.kind === 'openai'
                ? { error: { message: bad, type: 'invalid_request_error', param: 'messages', code: null } }
                : { type: 'error', error: { type: 'invalid_request_error', message: bad } },
            ),
          );
        return;
      }
      const want = opts.kind === 'openai' ? '/v1/chat/completions' : '/v1/messages';
      if (req.method !== 'POST' || path !== want) {
        res.writeHead(404, CORS).end(`{"error":{"message":"no route ${path}"}}`);
        return;
      }
      if (
        opts.kind === 'anthropic' &&
        (req.headers['anthropic-version'] !== '2023-06-01' || typeof body.max_tokens !== 'number')
      ) {
        res
          .writeHead(400, { ...CORS, 'content-type': 'application/json' })
          .end(
            '{"type":"error","error":{"type":"invalid_request_error","message":"anthropic-version header and max_tokens are required"}}',
          );
        return;
      }
      const n = requests.length - 1;
      let r;
      try {
        r = opts.script(body, n, rec);
      } catch (e) {
        res.writeHead(500, CORS).end(JSON.stringify({ error: { message: String(e?.message ?? e) } }));
        return;
      }
      if (r.status && r.status !== 200) {
        const message = r.errorMessage ?? 'scripted failure';
        res
          .writeHead(r.status, {
            ...CORS,
            'content-type': 'application/json',
            ...(r.retryAfter !== undefined ? { 'retry-after': r.retryAfter } : {}),
          })
          .end(
            JSON.stringify(
              opts.kind === 'openai'
                ? { error: { message, type: r.status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null } }
                : { type: 'error', error: { type: r.status === 429 ? 'rate_limit_error' : 'api_error', message } },
            ),
          );
        return;
      }
      const go = () => {
        if (opts.kind === 'anthropic') void anthropicStream(res, r, n);
        else if (body.stream) void openaiStream(res, r, n);
        else openaiJson(res, r, n);
      };
      if (r.delayMs) setTimeout(go, r.delayMs);
      else go();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const origin = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    origin,
    url: opts.kind === 'openai' ? `${origin}/v1` : origin,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
