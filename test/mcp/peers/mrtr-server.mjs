// A 2026-07-28 MCP server on the 2.x SDK (serveStdio) with the conformance suite's multi-round-trip diagnostic tools
// (SEP-2322 input_required), an HMAC-sealed requestState and a tool that reports what it was answered; test peer,
// untrusted side.
import { McpServer, createRequestStateCodec } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

// the suite's expected payloads (the scenario descriptions of @modelcontextprotocol/conformance 0.2.0-alpha.12)
const elicit = (message, properties, required) => ({
  method: 'elicitation/create',
  params: { message, requestedSchema: { type: 'object', properties, required } },
});
const sample = (text, maxTokens) => ({
  method: 'sampling/createMessage',
  params: { messages: [{ role: 'user', content: { type: 'text', text } }], maxTokens },
});
const roots = { method: 'roots/list', params: {} };
const asked = (inputRequests, requestState) => ({
  resultType: 'input_required',
  inputRequests,
  ...(requestState !== undefined ? { requestState } : {}),
});
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const codec = createRequestStateCodec({ key: 'mrtr-fixture-key-of-at-least-thirty-two-bytes!', ttlSeconds: 600 });
const none = z.object({});

serveStdio(() => {
  const server = new McpServer(
    { name: 'mrtr-fixture', version: '1.0.0' },
    { requestState: { verify: (s, ctx) => codec.verify(s, ctx) } },
  );
  const tool = (name, fn) =>
    server.registerTool(name, { description: `conformance: ${name}`, inputSchema: none }, async (_a, ctx) =>
      fn(ctx.mcpReq.inputResponses, ctx.mcpReq.requestState(), ctx),
    );
  tool('test_input_required_result_elicitation', (r) =>
    r?.user_name
      ? text(`Hello, ${r.user_name.content?.name ?? '?'}!`)
      : asked({ user_name: elicit('What is your name?', { name: { type: 'string' } }, ['name']) }),
  );
  tool('test_input_required_result_sampling', (r) =>
    r?.capital_question
      ? text(`sampled: ${JSON.stringify(r.capital_question.content)}`)
      : asked({ capital_question: sample('What is the capital of France?', 100) }),
  );
  tool('test_input_required_result_list_roots', (r) =>
    r?.client_roots
      ? text(`roots: ${r.client_roots.roots.map((x) => x.uri).join(', ')}`)
      : asked({ client_roots: roots }),
  );
  tool('test_input_required_result_request_state', async (r, state) =>
    r?.confirm && state?.step === 'confirm'
      ? text('state-ok')
      : asked(
          { confirm: elicit('Please confirm', { ok: { type: 'boolean' } }, ['ok']) },
          await codec.mint({ step: 'confirm' }),
        ),
  );
  tool('test_input_required_result_tampered_state', async (r, state) =>
    r?.confirm && state?.step === 'tamper'
      ? text('state-ok')
      : asked(
          { confirm: elicit('Please confirm', { ok: { type: 'boolean' } }, ['ok']) },
          await codec.mint({ step: 'tamper' }),
        ),
  );
  tool('test_input_required_result_multiple_inputs', async (r, state) =>
    r?.user_name && r?.greeting && r?.client_roots && state?.step === 'multi'
      ? text(`all three: ${r.user_name.content?.name}`)
      : asked(
          {
            user_name: elicit('What is your name?', { name: { type: 'string' } }, ['name']),
            greeting: sample('Generate a greeting', 50),
            client_roots: roots,
          },
          await codec.mint({ step: 'multi' }),
        ),
  );
  tool('test_input_required_result_multi_round', async (r, state) => {
    if (state?.round === 2 && r?.step2) return text(`done: ${state.name} likes ${r.step2.content?.color}`);
    if (state?.round === 1 && r?.step1)
      return asked(
        { step2: elicit('Step 2: What is your favorite color?', { color: { type: 'string' } }, ['color']) },
        await codec.mint({ round: 2, name: r.step1.content?.name }),
      );
    return asked(
      { step1: elicit('Step 1: What is your name?', { name: { type: 'string' } }, ['name']) },
      await codec.mint({ round: 1 }),
    );
  });
  // only what the client declared on this request (its envelope): sampling without elicitation gets sampling only
  tool('test_input_required_result_capabilities', (r, _s, ctx) => {
    const caps = ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? {};
    if (r && Object.keys(r).length > 0) return text('answered');
    const want = {};
    if (caps.elicitation) want.user_name = elicit('What is your name?', { name: { type: 'string' } }, ['name']);
    if (caps.sampling) want.greeting = sample('Generate a greeting', 50);
    if (caps.roots) want.client_roots = roots;
    return Object.keys(want).length > 0 ? asked(want) : text('nothing declared');
  });
  // input_required on prompts/get (SEP-2322 "non-tool request")
  server.registerPrompt(
    'test_input_required_result_prompt',
    { description: 'conformance: a prompt that asks for context first' },
    async (...a) => {
      const r = a.at(-1)?.mcpReq?.inputResponses;
      return r?.user_context
        ? {
            messages: [
              { role: 'user', content: { type: 'text', text: `context: ${r.user_context.content?.context}` } },
            ],
          }
        : asked({
            user_context: elicit('What context should the prompt use?', { context: { type: 'string' } }, ['context']),
          });
    },
  );
  // for the bridge's own tests: what the server was answered and which capabilities it was told of
  tool('report', (r, _s, ctx) =>
    r?.q
      ? text(
          `answered ${JSON.stringify(r.q)} caps ${JSON.stringify(ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? {})}`,
        )
      : asked({ q: elicit('Which colour? (visible text)', { colour: { type: 'string' } }, ['colour']) }),
  );
  return server;
});
