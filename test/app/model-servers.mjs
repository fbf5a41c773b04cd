// Scripted model servers for the chat app's tests: faithful loopback peers of the OpenAI Chat Completions and Anthropic
// Messages wire formats; test code.
// They speak each API's HTTP+SSE framing as documented (OpenAI: `data: {chunk}` lines with choices[0].delta content and
// tool_calls deltas merged by index, ending with `data: [DONE]`; Anthropic: named events message_start,
// content_block_start/delta/stop with text_delta and input_json_delta, message_delta, message_stop), answer CORS
// preflights
// like a server configured for browser access, and record every request so tests can check what the app sent.
import { createServer } from 'node:http';

/**
 * @typedef {{ name: string, arguments: object | string }} ScriptedCall
 * @typedef {{ text?: string, toolCalls?: ScriptedCall[], hang?: boolean, status?: number, stream?: boolean }}
 *   ScriptedReply
 * @typedef {{ path: string, headers: Record<string, string | string[] | undefined>, body: any }} RecordedRequest
 */

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers':
    'authorization, content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, accept',
  'access-control-max-age': '600',
};

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
function openaiStream(res, r, n, signal) {
  res.writeHead(200, { ...CORS, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const id = `chatcmpl-${n}`;
  const send = (delta, finish = null) =>
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'scripted', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
    );
  send({ role: 'assistant', content: '' });
  for (const p of pieces(r.text ?? '', 4)) if (p) send({ content: p });
  if (r.hang) return; // keeps the stream open until the client goes away
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
  void signal;
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

function anthropicStream(res, r, n) {
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
    for (const p of pieces(r.text, 4)) ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } });
    if (r.hang) return;
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
        res
          .writeHead(r.status, { ...CORS, 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'scripted failure' } }));
        return;
      }
      if (opts.kind === 'anthropic') anthropicStream(res, r, n);
      else if (body.stream) openaiStream(res, r, n);
      else openaiJson(res, r, n);
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
