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
import { contentError, historyError, keyOf, responsesError, usageOf } from './peer-rules.mjs';
import { responsesJson, responsesStream } from './peer-responses.mjs';

export { historyError } from './peer-rules.mjs';

/**
 * @typedef {{ name: string, arguments: object | string }} ScriptedCall
 * @typedef {{ text?: string, toolCalls?: ScriptedCall[], hang?: boolean, status?: number, stream?: boolean,
 *   retryAfter?: string, errorMessage?: string, cut?: boolean, pace?: { tokens: number, everyMs: number },
 *   noUsage?: boolean, delayMs?: number }} ScriptedReply
 * @typedef {{ path: string, method: string, headers: Record<string, string | string[] | undefined>, body: any,
 *   rejected?: string, usage?: { input: number, output: number } }} RecordedRequest
 */

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers':
    'authorization, content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, accept',
  'access-control-expose-headers': 'retry-after',
  'access-control-max-age': '600',
};

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

/**
 * @param {import('node:http').ServerResponse} res @param {ScriptedReply} r @param {number} n
 * @param {{ input: number, output: number } | undefined} usage sent as the last chunk (`choices: []`) when asked for
 */
async function openaiStream(res, r, n, usage) {
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
  if (usage)
    res.write(
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created: 0,
        model: 'scripted',
        choices: [],
        usage: {
          prompt_tokens: usage.input,
          completion_tokens: usage.output,
          total_tokens: usage.input + usage.output,
        },
      })}\n\n`,
    );
  res.end('data: [DONE]\n\n');
}

function openaiJson(res, r, n, usage) {
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
      ...(usage
        ? {
            usage: {
              prompt_tokens: usage.input,
              completion_tokens: usage.output,
              total_tokens: usage.input + usage.output,
            },
          }
        : {}),
    }),
  );
}

async function anthropicStream(res, r, n, usage) {
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
      ...(usage ? { usage: { input_tokens: usage.input, output_tokens: 1 } } : {}),
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
    ...(usage ? { usage: { output_tokens: usage.output } } : {}),
  });
  ev('message_stop', {});
  res.end();
}

/** The provider's error body for `status` and `message`. */
function errorBody(kind, status, message, type) {
  return kind === 'anthropic'
    ? { type: 'error', error: { type: type ?? (status === 429 ? 'rate_limit_error' : 'api_error'), message } }
    : {
        error: {
          message,
          type: type ?? (status === 429 ? 'rate_limit_exceeded' : 'server_error'),
          param: null,
          code: null,
        },
      };
}

/** One page of a models list as each API answers GET /v1/models (Anthropic: `limit`, `after_id`, `has_more`). */
function modelsPage(kind, models, url) {
  if (kind !== 'anthropic')
    return { object: 'list', data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' })) };
  const limit = Math.min(1000, Math.max(1, Number(url.searchParams.get('limit') ?? 20)));
  const after = url.searchParams.get('after_id');
  const from = after ? models.indexOf(after) + 1 : 0;
  const page = models.slice(from, from + limit);
  return {
    data: page.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' })),
    has_more: from + limit < models.length,
    first_id: page[0] ?? null,
    last_id: page.at(-1) ?? null,
  };
}

/**
 * Start a scripted model server on 127.0.0.1 (ephemeral port).
 * @param {{ kind: 'openai' | 'anthropic' | 'openai-responses',
 *   script: (body: any, n: number, req: RecordedRequest) => ScriptedReply,
 *   key?: string, models?: string[], allowHeaders?: string[] }} opts
 *   `script` gets the parsed request body and the request's number (0-based) and returns the reply. With `key`, every
 *   request must carry exactly that key in the API's own header (and no other API's credential header): else 401, as
 *   the provider answers it. With `models`, a request for another model gets the provider's 404, and GET /v1/models
 *   lists them. `allowHeaders`: more request headers CORS allows (a connection's extra headers).
 * @returns {Promise<{ url: string, origin: string, requests: RecordedRequest[], close(): Promise<void> }>}
 *   `url` is the endpoint a person would type (OpenAI: `<origin>/v1`; Anthropic: `<origin>`). Refused requests are
 *   recorded with `rejected` (the provider's message).
 */
export async function startScriptedModel(opts) {
  /** @type {RecordedRequest[]} */
  const requests = [];
  const cors = {
    ...CORS,
    'access-control-allow-headers': [CORS['access-control-allow-headers'], ...(opts.allowHeaders ?? [])].join(', '),
  };
  const api = opts.kind === 'openai-responses' ? 'openai' : opts.kind;
  const server = createServer((req, res) => {
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const path = url.pathname;
      const refuse = (rec, status, message, type) => {
        rec.rejected = message;
        res
          .writeHead(status, { ...cors, 'content-type': 'application/json' })
          .end(JSON.stringify(errorBody(api, status, message, type)));
      };
      const checkKey = (rec) => {
        if (opts.key === undefined) return true;
        const { key, foreign } = keyOf(api, req.headers);
        if (foreign !== undefined) {
          refuse(
            rec,
            401,
            `a credential header of another API was sent (${api === 'anthropic' ? 'authorization' : 'x-api-key'})`,
            'authentication_error',
          );
          return false;
        }
        if (key !== opts.key) {
          refuse(
            rec,
            401,
            api === 'anthropic' ? 'invalid x-api-key' : `Incorrect API key provided: ${String(key ?? '').slice(0, 6)}…`,
            api === 'anthropic' ? 'authentication_error' : 'invalid_request_error',
          );
          return false;
        }
        return true;
      };
      if (req.method === 'GET') {
        const rec = { path, method: 'GET', headers: req.headers, body: undefined };
        requests.push(rec);
        if (path !== '/v1/models') return refuse(rec, 404, `no route ${path}`, 'not_found_error');
        if (api === 'anthropic' && req.headers['anthropic-version'] !== '2023-06-01')
          return refuse(rec, 400, 'anthropic-version: header is required', 'invalid_request_error');
        if (!checkKey(rec)) return;
        res
          .writeHead(200, { ...cors, 'content-type': 'application/json' })
          .end(JSON.stringify(modelsPage(api, opts.models ?? [], url)));
        return;
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400, cors).end('{"error":{"message":"body is not JSON"}}');
        return;
      }
      const rec = { path, method: 'POST', headers: req.headers, body };
      requests.push(rec);
      if (!checkKey(rec)) return;
      const bad =
        opts.kind === 'openai-responses'
          ? responsesError(body)
          : (historyError(opts.kind, body) ?? contentError(opts.kind, body));
      if (bad) return refuse(rec, 400, bad, 'invalid_request_error');
      const want = { openai: '/v1/chat/completions', anthropic: '/v1/messages', 'openai-responses': '/v1/responses' }[
        opts.kind
      ];
      if (req.method !== 'POST' || path !== want) return refuse(rec, 404, `no route ${path}`, 'not_found_error');
      if (opts.models && !opts.models.includes(body.model))
        return refuse(
          rec,
          404,
          api === 'anthropic'
            ? `model: ${body.model}`
            : `The model \`${body.model}\` does not exist or you do not have access to it.`,
          api === 'anthropic' ? 'not_found_error' : 'invalid_request_error',
        );
      if (
        opts.kind === 'anthropic' &&
        (req.headers['anthropic-version'] !== '2023-06-01' || typeof body.max_tokens !== 'number')
      )
        return refuse(rec, 400, 'anthropic-version header and max_tokens are required', 'invalid_request_error');
      const n = requests.length - 1;
      let r;
      try {
        r = opts.script(body, n, rec);
      } catch (e) {
        res.writeHead(500, cors).end(JSON.stringify({ error: { message: String(e?.message ?? e) } }));
        return;
      }
      if (r.status && r.status !== 200) {
        res
          .writeHead(r.status, {
            ...cors,
            'content-type': 'application/json',
            ...(r.retryAfter !== undefined ? { 'retry-after': r.retryAfter } : {}),
          })
          .end(JSON.stringify(errorBody(api, r.status, r.errorMessage ?? 'scripted failure')));
        return;
      }
      const usage = r.noUsage ? undefined : usageOf(body, r.text);
      if (usage) rec.usage = usage;
      const go = () => {
        if (opts.kind === 'anthropic') void anthropicStream(res, r, n, usage);
        else if (opts.kind === 'openai-responses') {
          if (body.stream) void responsesStream(res, r, n, usage, cors);
          else responsesJson(res, r, n, usage, cors);
        } else if (body.stream) void openaiStream(res, r, n, body.stream_options?.include_usage ? usage : undefined);
        else openaiJson(res, r, n, usage);
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
    url: api === 'openai' ? `${origin}/v1` : origin,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
