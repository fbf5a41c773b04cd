// The scripted OpenAI Responses API peer's answers: the streaming events (response.created, output items, text and
// function-call argument deltas, response.completed with usage) and the whole response object; test code.

const argText = (a) => (typeof a === 'string' ? a : JSON.stringify(a));

/** Split a string into about `n` pieces (to exercise delta merging). */
function pieces(s, n) {
  if (s.length <= 1) return [s];
  const size = Math.ceil(s.length / n);
  const out = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

/** The output items of a scripted reply: a message with its text, then one function_call per tool call. */
function outputItems(r, n) {
  const items = [];
  if (r.text)
    items.push({
      type: 'message',
      id: `msg_${n}`,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: r.text, annotations: [] }],
    });
  (r.toolCalls ?? []).forEach((c, i) =>
    items.push({
      type: 'function_call',
      id: `fc_${n}_${i}`,
      call_id: `call_scripted_${n}_${i}`,
      name: c.name,
      arguments: argText(c.arguments),
      status: 'completed',
    }),
  );
  return items;
}

function responseObject(r, n, usage, status, output) {
  return {
    id: `resp_${n}`,
    object: 'response',
    created_at: 0,
    status,
    model: 'scripted',
    output,
    ...(usage && status !== 'in_progress'
      ? { usage: { input_tokens: usage.input, output_tokens: usage.output, total_tokens: usage.input + usage.output } }
      : {}),
  };
}

/** Stream a reply as the Responses API does (named events, each with `type` and a `sequence_number`). */
export async function responsesStream(res, r, n, usage, cors) {
  res.writeHead(200, { ...cors, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  const ev = (type, data) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  ev('response.created', { response: responseObject(r, n, undefined, 'in_progress', []) });
  const items = outputItems(r, n);
  for (const [i, item] of items.entries()) {
    if (item.type === 'message') {
      ev('response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress', content: [] } });
      ev('response.content_part.added', {
        item_id: item.id,
        output_index: i,
        content_index: 0,
        part: { type: 'output_text', text: '' },
      });
      for (const p of pieces(r.text, 4))
        ev('response.output_text.delta', { item_id: item.id, output_index: i, content_index: 0, delta: p });
      if (r.hang) return;
      if (r.cut) return void setTimeout(() => res.socket?.destroy(), 50);
      ev('response.output_text.done', { item_id: item.id, output_index: i, content_index: 0, text: r.text });
      ev('response.output_item.done', { output_index: i, item });
    } else {
      ev('response.output_item.added', { output_index: i, item: { ...item, arguments: '', status: 'in_progress' } });
      for (const p of pieces(item.arguments, 2))
        ev('response.function_call_arguments.delta', { item_id: item.id, output_index: i, delta: p });
      ev('response.function_call_arguments.done', { item_id: item.id, output_index: i, arguments: item.arguments });
      ev('response.output_item.done', { output_index: i, item });
    }
  }
  ev('response.completed', { response: responseObject(r, n, usage, 'completed', items) });
  res.end();
}

/** Answer with the whole response object (`stream: false`). */
export function responsesJson(res, r, n, usage, cors) {
  res.writeHead(200, { ...cors, 'content-type': 'application/json' });
  res.end(JSON.stringify(responseObject(r, n, usage, 'completed', outputItems(r, n))));
}
