// An MCP server written with the SDK for bridge and conformance tests: the conformance suite's scenarios, paginated
// lists, resource links, completion, subscriptions; test peer, untrusted side.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  ElicitResultSchema,
} from '@modelcontextprotocol/sdk/types.js';

// The conformance suite's expected payloads (it prints what each scenario expects).
const IMAGE = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const AUDIO = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';
const empty = { type: 'object', properties: {} };
const tools = [
  { name: 'test_simple_text', description: 'Tests simple text content response', inputSchema: empty },
  { name: 'test_image_content', description: 'Tests image content response', inputSchema: empty },
  { name: 'test_audio_content', description: 'Tests audio content response', inputSchema: empty },
  { name: 'test_embedded_resource', description: 'Tests embedded resource content response', inputSchema: empty },
  {
    name: 'test_multiple_content_types',
    description: 'Tests response with multiple content types (text, image, resource)',
    inputSchema: empty,
  },
  {
    name: 'test_tool_with_logging',
    description: 'Tests tool that emits log messages during execution',
    inputSchema: empty,
  },
  {
    name: 'test_tool_with_progress',
    description: 'Tests tool that reports progress notifications',
    inputSchema: empty,
  },
  { name: 'test_error_handling', description: 'Tests error response handling', inputSchema: empty },
  {
    name: 'test_sampling',
    description: 'Tests server-initiated sampling (LLM completion request)',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
  },
  {
    name: 'test_elicitation',
    description: 'Tests server-initiated elicitation (user input request)',
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
  },
  // for the bridge's own tests
  { name: 'link', description: 'answers with a resource link and an embedded resource', inputSchema: empty },
  { name: 'set_level_seen', description: 'the last logging level the server was set to', inputSchema: empty },
  // an argument mirrored in a header (MCP 2026-07-28 x-mcp-header, SEP-2243)
  {
    name: 'test_custom_header',
    description: 'Tests a string argument mirrored in the Mcp-Param-Region header',
    inputSchema: {
      type: 'object',
      properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, note: { type: 'string' } },
      required: ['region'],
    },
  },
  {
    name: 'ask_twice',
    description: 'asks for a name, then a colour (two elicitations in one call)',
    inputSchema: empty,
  },
];
// FX_DUP=1: a second tool under an existing name (a server bug the bridge must not guess about)
if (process.env.FX_DUP === '1')
  tools.push({ name: 'test_simple_text', description: 'a different tool under the same name', inputSchema: empty });

const resources = [
  {
    uri: 'test://static-text',
    name: 'static-text',
    title: 'Static Text Resource',
    description: 'A static text resource for testing',
    mimeType: 'text/plain',
  },
  {
    uri: 'test://static-binary',
    name: 'static-binary',
    title: 'Static Binary Resource',
    description: 'A static binary resource (image) for testing',
    mimeType: 'image/png',
  },
  {
    uri: 'test://watched-resource',
    name: 'watched-resource',
    title: 'Watched Resource',
    description: 'A resource that auto-updates',
    mimeType: 'text/plain',
  },
];
const templates = [
  {
    uriTemplate: 'test://template/{id}/data',
    name: 'template',
    title: 'Resource Template',
    description: 'A resource template with parameter substitution',
    mimeType: 'application/json',
  },
  {
    uriTemplate: 'test://other/{name}',
    name: 'other-template',
    description: 'a second template (on the second page)',
    mimeType: 'text/plain',
  },
];
const prompts = [
  { name: 'test_simple_prompt', title: 'Simple Test Prompt', description: 'A simple prompt without arguments' },
  {
    name: 'test_prompt_with_arguments',
    title: 'Prompt With Arguments',
    description: 'A prompt with required arguments',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
  },
  {
    name: 'test_prompt_with_embedded_resource',
    title: 'Prompt With Embedded Resource',
    description: 'A prompt that includes an embedded resource',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
  },
  { name: 'test_prompt_with_image', title: 'Prompt With Image', description: 'A prompt that includes image content' },
];

/** One page of `items` (page size 1 with FX_PAGES=1, else all): the cursor is the next index. */
function page(items, cursor) {
  const size = process.env.FX_PAGES === '1' ? 1 : items.length;
  const start = cursor === undefined ? 0 : Number(cursor);
  const out = items.slice(start, start + size);
  return { items: out, nextCursor: start + size < items.length ? String(start + size) : undefined };
}

const server = new Server(
  { name: 'mcp-conformance-test-server', version: '1.0.0' },
  {
    capabilities: {
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true },
      logging: {},
      completions: {},
    },
    instructions: process.env.FX_INSTRUCTIONS ?? 'Fixture server: call test_simple_text first.\u001b[2J',
  },
);
const subscriptions = new Set();
let level = 'none';
const log = (lvl, data) =>
  server
    .notification({ method: 'notifications/message', params: { level: lvl, logger: 'conformance-test-server', data } })
    .catch(() => undefined);

server.setRequestHandler(ListToolsRequestSchema, async (req) => {
  const p = page(tools, req.params?.cursor);
  return { tools: p.items, ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}) };
});
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const name = req.params.name;
  const text = (t) => ({ content: [{ type: 'text', text: t }] });
  switch (name) {
    case 'test_simple_text':
      return text('This is a simple text response for testing.');
    case 'test_image_content':
      return { content: [{ type: 'image', data: IMAGE, mimeType: 'image/png' }] };
    case 'test_audio_content':
      return { content: [{ type: 'audio', data: AUDIO, mimeType: 'audio/wav' }] };
    case 'test_embedded_resource':
      return {
        content: [
          {
            type: 'resource',
            resource: {
              uri: 'test://embedded-resource',
              mimeType: 'text/plain',
              text: 'This is an embedded resource content.',
            },
          },
        ],
      };
    case 'test_multiple_content_types':
      return {
        content: [
          { type: 'text', text: 'Multiple content types test:' },
          { type: 'image', data: IMAGE, mimeType: 'image/png' },
          {
            type: 'resource',
            resource: {
              uri: 'test://mixed-content-resource',
              mimeType: 'application/json',
              text: JSON.stringify({ test: 'data', value: 123 }),
            },
          },
        ],
      };
    case 'test_tool_with_logging':
      for (const m of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: m } });
        await new Promise((r) => setTimeout(r, 30));
      }
      return text('Tool with logging executed successfully');
    case 'test_tool_with_progress': {
      const token = req.params._meta?.progressToken ?? 0;
      for (const p of [0, 50, 100]) {
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: p, total: 100, message: `Completed step ${p} of 100` },
        });
        await new Promise((r) => setTimeout(r, 30));
      }
      return text(String(token));
    }
    case 'test_error_handling':
      return {
        content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
        isError: true,
      };
    case 'test_sampling':
      try {
        const r = await server.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: req.params.arguments?.prompt ?? '' } }],
          maxTokens: 100,
        });
        return text(`LLM response: ${r.content?.text ?? 'No response'}`);
      } catch (e) {
        return text(`Sampling not supported or error: ${e.message}`);
      }
    case 'test_elicitation':
      try {
        const r = await server.request(
          {
            method: 'elicitation/create',
            params: {
              mode: 'form',
              message: req.params.arguments?.message ?? '',
              requestedSchema: {
                type: 'object',
                properties: { response: { type: 'string', description: "User's response" } },
                required: ['response'],
              },
            },
          },
          ElicitResultSchema,
        );
        return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
      } catch (e) {
        return text(`Elicitation not supported or error: ${e.message}`);
      }
    case 'test_custom_header':
      return text(`region ${req.params.arguments?.region}`);
    case 'ask_twice': {
      const form = (message, field) =>
        server.request(
          {
            method: 'elicitation/create',
            params: {
              mode: 'form',
              message,
              requestedSchema: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] },
            },
          },
          ElicitResultSchema,
        );
      const a = await form('first: your name?', 'name');
      const b = await form(`second: your colour, ${a.content?.name ?? '?'}?`, 'colour');
      return text(`name=${a.content?.name} colour=${b.content?.colour} (${b.action})`);
    }
    case 'json_schema_2020_12_tool':
      return text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(req.params.arguments ?? {})}`);
    case 'link':
      return {
        content: [
          { type: 'resource_link', uri: 'test://static-text', name: 'static-text', mimeType: 'text/plain' },
          { type: 'resource', resource: { uri: 'test://template/7/data', mimeType: 'application/json', text: '{}' } },
        ],
      };
    case 'set_level_seen':
      return text(level);
    default:
      return { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true };
  }
});
server.setRequestHandler(ListResourcesRequestSchema, async (req) => {
  const p = page(resources, req.params?.cursor);
  return { resources: p.items, ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}) };
});
server.setRequestHandler(ListResourceTemplatesRequestSchema, async (req) => {
  const p = page(templates, req.params?.cursor);
  return { resourceTemplates: p.items, ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}) };
});
server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
  const uri = req.params.uri;
  if (uri === 'test://static-text')
    return { contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] };
  if (uri === 'test://static-binary') return { contents: [{ uri, mimeType: 'image/png', blob: IMAGE }] };
  if (uri === 'test://watched-resource')
    return { contents: [{ uri, mimeType: 'text/plain', text: 'Watched resource content' }] };
  const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
  if (m)
    return {
      contents: [
        {
          uri,
          mimeType: 'application/json',
          text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }),
        },
      ],
    };
  const o = /^test:\/\/other\/(.+)$/.exec(uri);
  if (o) return { contents: [{ uri, mimeType: 'text/plain', text: `other ${o[1]}` }] };
  throw new Error(`Resource ${uri} not found`);
});
server.setRequestHandler(SubscribeRequestSchema, async (req) => {
  subscriptions.add(req.params.uri);
  log('info', `Subscribed to resource: ${req.params.uri}`);
  // an update right away, so a subscriber sees one
  setTimeout(() => void server.sendResourceUpdated({ uri: req.params.uri }).catch(() => undefined), 50);
  return {};
});
server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
  subscriptions.delete(req.params.uri);
  log('info', `Unsubscribed from resource: ${req.params.uri}`);
  return {};
});
server.setRequestHandler(ListPromptsRequestSchema, async (req) => {
  const p = page(prompts, req.params?.cursor);
  return { prompts: p.items, ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}) };
});
server.setRequestHandler(GetPromptRequestSchema, async (req) => {
  const a = req.params.arguments ?? {};
  switch (req.params.name) {
    case 'test_simple_prompt':
      return { messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }] };
    case 'test_prompt_with_arguments':
      return {
        messages: [
          {
            role: 'user',
            content: { type: 'text', text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` },
          },
        ],
      };
    case 'test_prompt_with_embedded_resource':
      return {
        messages: [
          {
            role: 'user',
            content: {
              type: 'resource',
              resource: { uri: a.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' },
            },
          },
          { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
        ],
      };
    case 'test_prompt_with_image':
      return {
        messages: [
          { role: 'user', content: { type: 'image', data: IMAGE, mimeType: 'image/png' } },
          { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
        ],
      };
    default:
      throw new Error(`no prompt ${req.params.name}`);
  }
});
server.setRequestHandler(SetLevelRequestSchema, async (req) => {
  level = req.params.level;
  log('info', `Log level set to: ${level}`);
  return {};
});
server.setRequestHandler(CompleteRequestSchema, async (req) => {
  const ref = req.params.ref;
  const values =
    ref.type === 'ref/prompt' && ref.name === 'test_prompt_with_arguments'
      ? ['alpha', 'beta'].filter((v) => v.startsWith(req.params.argument.value))
      : ref.type === 'ref/resource' && ref.uri === 'test://template/{id}/data'
        ? ['1', '2', '42']
        : [];
  return { completion: { values, total: values.length, hasMore: false } };
});

await server.connect(new StdioServerTransport());
