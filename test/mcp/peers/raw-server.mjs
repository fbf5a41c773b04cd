// A raw JSON-RPC MCP server for bridge tests: sends server-to-client requests and odd notifications on demand; test
// peer, untrusted side.
import { createInterface } from 'node:readline';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

// FX_CHILD=1: start a long-lived child in the same process group (like npx starting node)
const child =
  process.env.FX_CHILD === '1'
    ? spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
    : undefined;
// FX_KEEP=1: a timer keeps the process alive even after its stdin closes (a server that does not exit on its own)
if (process.env.FX_KEEP === '1') setInterval(() => {}, 1000);
// FX_INIT_DELAY=ms: answer initialize late (a slow-starting server)
const initDelay = Number(process.env.FX_INIT_DELAY ?? 0);

const received = [];
let initCaps = null;
const pending = new Map();
let nextId = 90;
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const tools = [
  {
    name: 'poke',
    description: 'asks the client things',
    inputSchema: { type: 'object', properties: {} },
    annotations: { destructiveHint: true },
  },
  {
    name: 'search',
    description: 'search',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    annotations: { readOnlyHint: true },
  },
  { name: 'received', description: 'what reached the server', inputSchema: { type: 'object', properties: {} } },
  process.env.FX_VARIANT === 'b'
    ? {
        name: 'find',
        description: 'find in a repo',
        inputSchema: {
          type: 'object',
          properties: { q: { type: 'string' }, repo: { type: 'string' } },
          required: ['q', 'repo'],
        },
      }
    : {
        name: 'find',
        description: 'find by language',
        inputSchema: {
          type: 'object',
          properties: { q: { type: 'string' }, lang: { type: 'string' } },
          required: ['q'],
        },
      },
  {
    name: 'big',
    description: 'answers with n bytes',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
  },
  {
    name: 'slow',
    description: 'answers after ms',
    inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
  },
  {
    name: 'bad',
    description: 'answers with a result that is not a CallToolResult',
    inputSchema: { type: 'object', properties: { how: { type: 'string' } } },
  },
  { name: 'crash', description: 'the process exits', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'junk',
    description: 'writes n lines that are not JSON-RPC, then answers',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
  },
  {
    name: 'shaped',
    description: 'structured output',
    inputSchema: { type: 'object', properties: { n: {} } },
    outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  },
];
// FX_SCHEMAS=1: tools whose schemas carry regexes (a catastrophic one, and one only a backtracking engine can run)
if (process.env.FX_SCHEMAS === '1') {
  tools.push(
    {
      name: 'redos',
      description: 'catastrophic pattern',
      inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '(a+)+$' } } },
    },
    {
      name: 'backref',
      description: 'backreference pattern',
      inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } } },
    },
    {
      name: 'lookout',
      description: 'lookahead in an output schema',
      inputSchema: { type: 'object', properties: {} },
      outputSchema: { type: 'object', patternProperties: { '^(?=x)': {} } },
    },
  );
}

// FX_NAMES=1: tools whose name or description carries terminal escapes
if (process.env.FX_NAMES === '1') {
  tools.push(
    { name: 'esc\u001b]0;PWN\u0007', description: 'bad name', inputSchema: { type: 'object', properties: {} } },
    {
      name: 'fine',
      description: 'desc \u001b[2J with \u202e bidi\nsecond line',
      inputSchema: { type: 'object', properties: {} },
    },
  );
}

function ask(method, params) {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
  });
}

createInterface({ input: process.stdin }).on('line', async (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.method) received.push({ method: m.method, hasId: 'id' in m, name: m.params?.name });
  if (m.id !== undefined && !m.method) {
    const r = pending.get(m.id);
    pending.delete(m.id);
    r?.(m);
    return;
  }
  // a tools/call sent without an id would run here; the bridge must never let one through
  if (m.method === 'initialize') {
    initCaps = m.params?.capabilities ?? null;
    if (initDelay > 0) await new Promise((r) => setTimeout(r, initDelay));
    send({
      jsonrpc: '2.0',
      id: m.id,
      result: {
        protocolVersion: m.params.protocolVersion,
        capabilities: { tools: { listChanged: true }, logging: {} },
        serverInfo: { name: 'fixture', version: '1' },
      },
    });
  } else if (m.method === 'tools/list') {
    // FX_TOOLS_FILE=path: JSON {TOOL: {description?, inputSchema?, annotations?}} read at each listing (a changed tool)
    let listed = tools;
    if (process.env.FX_TOOLS_FILE) {
      let over = {};
      try {
        over = JSON.parse(readFileSync(process.env.FX_TOOLS_FILE, 'utf8'));
      } catch {}
      listed = tools.map((t) => (over[t.name] ? { ...t, ...over[t.name] } : t));
    }
    send({ jsonrpc: '2.0', id: m.id, result: { tools: listed } });
  } else if (m.method === 'ping') {
    send({ jsonrpc: '2.0', id: m.id, result: {} });
  } else if (m.method === 'tools/call' && m.id !== undefined) {
    const name = m.params?.name;
    if (name === 'poke') {
      const answers = await Promise.all([
        ask('sampling/createMessage', {}),
        ask('elicitation/create', {}),
        ask('roots/list'),
        ask('ping'),
      ]);
      send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      send({ jsonrpc: '2.0', method: 'x-vendor/anything' });
      send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hello' } });
      send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: JSON.stringify(answers) }] } });
    } else if (name === 'received') {
      send({
        jsonrpc: '2.0',
        id: m.id,
        result: {
          content: [
            {
              type: 'text',
              text: JSON.stringify({ received, initCaps, cwd: process.cwd(), pgid: process.pid, childPid: child?.pid }),
            },
          ],
        },
      });
    } else if (name === 'search') {
      send({
        jsonrpc: '2.0',
        id: m.id,
        result: { content: [{ type: 'text', text: 'found ' + m.params.arguments.q }] },
      });
    } else if (name === 'find') {
      send({
        jsonrpc: '2.0',
        id: m.id,
        result: {
          content: [
            { type: 'text', text: `${process.env.FX_VARIANT ?? 'a'} found ${JSON.stringify(m.params.arguments)}` },
          ],
        },
      });
    } else if (name === 'crash') {
      process.exit(3);
    } else if (name === 'junk') {
      for (let i = 0; i < m.params.arguments.n; i++)
        process.stdout.write(i % 2 ? 'not json at all\n' : '{"no":"jsonrpc"}\n');
      send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'after junk' }] } });
    } else if (name === 'slow') {
      setTimeout(
        () => send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'slept' }] } }),
        m.params.arguments.ms,
      );
    } else if (name === 'bad') {
      const how = m.params.arguments.how;
      const result =
        how === 'content'
          ? { content: 'not a list' }
          : how === 'block'
            ? { content: [{ type: 'text' }] }
            : how === 'iserror'
              ? { content: [], isError: 'yes' }
              : 42;
      send({ jsonrpc: '2.0', id: m.id, result });
    } else if (name === 'shaped') {
      send({
        jsonrpc: '2.0',
        id: m.id,
        result: { content: [{ type: 'text', text: 'n' }], structuredContent: { n: m.params.arguments.n } },
      });
    } else if (name === 'redos') {
      send({
        jsonrpc: '2.0',
        id: m.id,
        result: { content: [{ type: 'text', text: `got ${String(m.params.arguments.s).length}` }] },
      });
    } else if (name === 'big') {
      send({
        jsonrpc: '2.0',
        id: m.id,
        result: { content: [{ type: 'text', text: 'x'.repeat(m.params.arguments.n) }] },
      });
    } else {
      send({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: 'unknown tool' } });
    }
  } else if (m.id !== undefined) {
    send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } });
  }
});
