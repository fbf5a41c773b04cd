// The Python `mcp` SDK client (an implementation no one here wrote) against `tycli mcp proxy` over stdio and `tycli mcp
// serve --http`; test side.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveHttp } from '../../node/mcp/serve-http.js';
import { ROOT, addNodeServer, tempHome } from './helpers.js';

// a virtual environment of its own (gitignored), made once with pip from the configured package index
const VENV = join(ROOT, 'test/conformance/.venv');
const PY = join(VENV, 'bin/python');
const CLIENT = join(ROOT, 'test/conformance/python_client.py');

let home: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  if (!existsSync(PY) || spawnSync(PY, ['-c', 'import mcp'], { stdio: 'ignore' }).status !== 0) {
    const mk = spawnSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit', timeout: 120_000 });
    if (mk.status !== 0) throw new Error('python3 -m venv failed (Debian: apt-get install python3-venv)');
    const pip = spawnSync(join(VENV, 'bin/pip'), ['install', '--quiet', '--retries', '1', 'mcp==2.3.0'], {
      stdio: 'inherit',
      timeout: 600_000,
    });
    if (pip.status !== 0)
      throw new Error('pip could not install the Python mcp SDK (mcp==2.3.0): no package index reachable');
  }
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'sdk', join(ROOT, 'test/mcp/peers/sdk-server.mjs'), [], { ask: 'none' });
}, 900_000);
afterAll(async () => {
  await cleanup();
});

function python(args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const p = spawn(PY, [CLIENT, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => (out += String(c)));
    p.stderr.on('data', (c) => (err += String(c)));
    p.once('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>)
        : reject(new Error(`python client exited ${code}: ${err.slice(-2000)}`)),
    );
  });
}

const expected = (prefix: string) => ({
  text: 'This is a simple text response for testing.',
  isError: true,
  badArgs: [true, expect.stringContaining('unlisted field "nope"')],
  read: expect.stringContaining('Data for ID: 5'),
  prompt: "Prompt with arguments: arg1='a', arg2='b'",
  tools: expect.arrayContaining([`${prefix}test_simple_text`, `${prefix}json_schema_2020_12_tool`]),
});

describe('the Python mcp SDK client', () => {
  it('drives tycli mcp proxy over stdio: own names, instructions, tool errors as isError, templates, prompts', async () => {
    const seen = await python([
      'stdio',
      '',
      process.execPath,
      '--import',
      'tsx',
      join(ROOT, 'test/mcp/cli-entry.ts'),
      '--home',
      home,
      'mcp',
      'proxy',
      'sdk',
    ]);
    expect(seen).toMatchObject(expected(''));
    expect(seen.instructions).toBe('Fixture server: call test_simple_text first.\\x1b[2J');
  }, 120_000);

  it('drives mcp serve over streamable HTTP with the bearer token: SERVER__ names and tymcp:// URIs', async () => {
    const bridge = new McpBridge({ home, sandbox: 'py' });
    const h = await serveHttp(bridge, { port: 0 });
    try {
      expect(await python(['http', h.url, h.token, 'sdk__'])).toMatchObject(expected('sdk__'));
    } finally {
      await h.close();
      await bridge.close();
    }
  }, 120_000);
});
