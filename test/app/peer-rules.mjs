// What the scripted model servers refuse, as the real APIs do (OpenAI Chat Completions and Responses, Anthropic
// Messages): histories with a tool call and no result, attachments not in the API's own format, a wrong key, an
// unknown model, a temperature out of range; and the token usage they report; test code.

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/** The image type of base64 `data` by its first bytes (as Anthropic checks it against the declared media type). */
export function sniffBase64(data) {
  let b;
  try {
    b = Buffer.from(data, 'base64');
  } catch {
    return undefined;
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data) || b.length === 0) return undefined;
  if (b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  return undefined;
}

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

/**
 * Why the provider would refuse the content of this request (HTTP 400), or undefined. OpenAI: a user message's
 * `content` is a string or parts of type `text` (a string `text`) and `image_url` (a `data:` URL of a supported image
 * type with base64 data matching it); image parts only in user messages; temperature 0 to 2. Anthropic: `system` is
 * text, user blocks are non-empty `text` or `image` with a `base64` source of a supported media type whose data
 * (without a `data:` prefix) is that type; temperature 0 to 1; `max_tokens` at least 1.
 */
export function contentError(kind, body) {
  const msgs = Array.isArray(body?.messages) ? body.messages : [];
  if (kind === 'openai') {
    if (body.temperature !== undefined && !(body.temperature >= 0 && body.temperature <= 2))
      return `Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got ${body.temperature} instead.`;
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i];
      if (!Array.isArray(m.content)) continue;
      for (const [j, p] of m.content.entries()) {
        if (p.type === 'text' && typeof p.text === 'string') continue;
        if (p.type !== 'image_url')
          return `Invalid value: '${p.type}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.`;
        if (m.role !== 'user')
          return `Invalid 'messages[${i}]'. Image URLs are only allowed for messages with role 'user', but this message with role '${m.role}' contains an image URL.`;
        const url = String(p.image_url?.url ?? '');
        const d = /^data:(image\/[a-z]+);base64,(.*)$/s.exec(url);
        if (!d || !IMAGE_TYPES.includes(d[1]) || sniffBase64(d[2]) !== d[1])
          return (
            `Invalid 'messages[${i}].content[${j}].image_url.url'. Expected a base64-encoded data URL with an image ` +
            "MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got an invalid value."
          );
      }
    }
    return undefined;
  }
  if (body.system !== undefined && typeof body.system !== 'string') return 'system: Input should be a valid string';
  if (!(Number.isInteger(body.max_tokens) && body.max_tokens >= 1))
    return 'max_tokens: Input should be greater than or equal to 1';
  if (body.temperature !== undefined && !(body.temperature >= 0 && body.temperature <= 1))
    return 'temperature: Input should be less than or equal to 1';
  for (let i = 0; i < msgs.length; i++) {
    const blocks = Array.isArray(msgs[i].content) ? msgs[i].content : [{ type: 'text', text: msgs[i].content }];
    for (const [j, b] of blocks.entries()) {
      if (b.type === 'text' && (typeof b.text !== 'string' || !b.text.trim()))
        return `messages.${i}.content.${j}.text: text content blocks must contain non-whitespace text`;
      if (b.type !== 'image') continue;
      if (msgs[i].role !== 'user') return `messages.${i}.content.${j}: image blocks are only allowed in user messages`;
      const s = b.source ?? {};
      if (s.type !== 'base64' || !IMAGE_TYPES.includes(s.media_type))
        return `messages.${i}.content.${j}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
      if (typeof s.data !== 'string' || sniffBase64(s.data) !== s.media_type)
        return `messages.${i}.content.${j}.image.source.base64.data: Image does not match the provided media type ${s.media_type}`;
    }
  }
  return undefined;
}

/**
 * Why the Responses API would refuse this request's `input` (HTTP 400), or undefined: a `function_call_output` must
 * answer an earlier `function_call` (its `call_id`), every `function_call` needs its output, user content parts are
 * `input_text` or `input_image` (a `data:` URL of a supported image), temperature 0 to 2.
 */
export function responsesError(body) {
  const input = Array.isArray(body?.input) ? body.input : [];
  if (body.temperature !== undefined && !(body.temperature >= 0 && body.temperature <= 2))
    return `Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got ${body.temperature} instead.`;
  const calls = new Set();
  const answered = new Set();
  for (const [i, it] of input.entries()) {
    if (it.type === 'function_call') calls.add(it.call_id);
    else if (it.type === 'function_call_output') {
      if (!calls.has(it.call_id)) return `No tool call found for function call output with call_id ${it.call_id}.`;
      answered.add(it.call_id);
    } else if ((it.type === 'message' || it.type === undefined) && Array.isArray(it.content)) {
      for (const [j, p] of it.content.entries()) {
        if (p.type === 'input_text' || p.type === 'output_text') continue;
        if (p.type !== 'input_image' || it.role !== 'user')
          return `Invalid value: '${p.type}' at input[${i}].content[${j}].`;
        const d = /^data:(image\/[a-z]+);base64,(.*)$/s.exec(String(p.image_url ?? ''));
        if (!d || !IMAGE_TYPES.includes(d[1]) || sniffBase64(d[2]) !== d[1])
          return `Invalid 'input[${i}].content[${j}].image_url'. Expected a base64-encoded data URL with an image MIME type.`;
      }
    }
  }
  for (const c of calls) if (!answered.has(c)) return `No tool output found for function call ${c}.`;
  return undefined;
}

/** The key a request carried for `kind`, and a foreign credential header it should not have carried. */
export function keyOf(kind, headers) {
  const bearer = /^Bearer (.+)$/.exec(String(headers.authorization ?? ''))?.[1];
  return kind === 'anthropic'
    ? { key: headers['x-api-key'], foreign: headers.authorization }
    : { key: bearer, foreign: headers['x-api-key'] };
}

/** Token counts the peers report: a word count of what was sent and of the answer (deterministic). */
export function usageOf(body, text) {
  const words = (s) => (String(s).match(/\S+/g) ?? []).length;
  const sent =
    JSON.stringify(body.messages ?? body.input ?? []) + JSON.stringify(body.system ?? body.instructions ?? '');
  return { input: 7 + words(sent), output: 1 + words(text ?? '') };
}
