// Every tycli command's --json output is the one-line envelope {"ok":true,...} / {"ok":false,"error":{code,message}};
// test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess, type Ran } from './helpers.js';
import { commands } from '../../node/cli/commands/index.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
const TOOL = join(ROOT, 'tools/examples/multi-file/manifest.json');
let tmp: string;
let h: string;
let rev: string;

const env = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, EDITOR: 'true', VISUAL: 'true' });
function tycli(args: string[]): Promise<Ran> {
  return runProcess(process.execPath, [BIN, '--home', h, '--json', ...args], env(), tmp);
}

/** The one envelope line: exactly one non-empty line, `ok` first, `{ok:false}` with error {code, message}. */
function envelope(r: Ran, what: string): Record<string, unknown> {
  const lines = r.stdout.split('\n').filter(Boolean);
  expect(
    lines,
    `${what}: stdout ${JSON.stringify(r.stdout.slice(0, 300))} stderr ${r.stderr.slice(0, 300)}`,
  ).toHaveLength(1);
  const o = JSON.parse(lines[0]!) as Record<string, unknown>;
  expect(Object.keys(o)[0], what).toBe('ok');
  expect(typeof o.ok, what).toBe('boolean');
  if (o.ok === false)
    expect(o.error, what).toMatchObject({ code: expect.stringMatching(/^E_[A-Z_]+$/), message: expect.any(String) });
  else expect(o.error, what).toBeUndefined();
  return o;
}

/**
 * Arguments that make each command finish at once (with a result or a refusal). Protocol servers speak their own
 * protocol on stdout (JSON-RPC / MCP messages), not the envelope: they are listed with the reason instead.
 */
const CASES: Record<string, string[][] | string> = {
  'tool add': [[TOOL], ['nosuch.json']],
  'tool list': [[], ['--revisions']],
  'tool show': [['unit-convert'], ['nosuch']],
  'tool activate': [
    ['unit-convert', 'REV'],
    ['unit-convert', 'other@REV'],
  ],
  'tool remove': [['nosuch', '--approve-removal']],
  'tool gc': [['--dry-run']],
  'tool diff': [['unit-convert@REV', 'unit-convert@REV']],
  'tool settings': [['unit-convert']],
  run: [
    ['unit-convert', '--args', '{"value":3,"from":"mi","to":"km"}'],
    ['unit-convert', '--args', '{"value":-3,"from":"mi","to":"km"}'],
  ],
  serve: 'speaks JSON-RPC 2.0 (tysandbox/1) on stdout, one message per line',
  questions: [[]],
  answer: [['nosuch', 'yes']],
  'ask status': [[]],
  'secret set': [['TOK']],
  'secret grant': [['TOK', '--tool', 'unit-convert@REV']],
  'secret revoke': [['TOK', '--tool', 'unit-convert']],
  'secret list': [[]],
  'secret delete': [['TOK']],
  'mcp add': [['srv', '--', 'node', '-e', '0']],
  'mcp list': [[]],
  'mcp show': [['srv'], ['nosuch']],
  'mcp remove': [['srv']],
  'mcp namespace set': [['NSFILE']],
  'mcp namespace remove': [['ns1']],
  'mcp serve': 'speaks MCP (JSON-RPC 2.0) on stdout',
  'mcp proxy': 'speaks MCP (JSON-RPC 2.0) on stdout',
  'mcp hub': 'speaks MCP to bridge clients on its socket; started by the bridge',
  audit: [[], ['--denied']],
  resume: [[], ['nosuch']],
  'permissions list': [[]],
  'permissions revoke': [['nosuch']],
  'permissions rules': [[]],
  'token create': [
    ['--principal', 'alice'],
    ['--principal', 'not a name'],
  ],
  'token list': [[]],
  'token revoke': [['nosuch']],
  'store migrate': [[]],
  'store copy': [['--to', 'mysql://db.invalid/x']],
  'store where': [[]],
  'sandbox status': [[]],
  diagnostics: [['--list'], ['--filter', 'no-such-contract']],
  app: 'runs until interrupted: tested below (one envelope, then it keeps serving)',
  'settings path': [[]],
  'settings show': [[]],
  'settings edit': [[]],
  completion: [['bash'], ['tcsh']],
};

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tycli-envelope-'));
  h = join(tmp, 'home');
  const r = await runProcess(process.execPath, [BIN, '--home', h, 'tool', 'add', TOOL], env(), tmp);
  if (r.code !== 0) throw new Error(r.stderr);
  rev = r.stdout.trim();
  await writeFile(
    join(tmp, 'ns.json'),
    JSON.stringify({
      v: 1,
      name: 'ns1',
      actions: [{ name: 'find', access: 'read', broadcast: false, targets: [{ kind: 'a', server: 'srv', tool: 'x' }] }],
    }),
  );
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('--json envelope of every command', () => {
  it('the table of cases covers every command', () => {
    expect(commands.map((c) => c.path.join(' ')).sort()).toEqual(Object.keys(CASES).sort());
  });

  it('every command prints exactly one line, {"ok":true,...} or {"ok":false,"error":{"code","message"}}', async () => {
    const seen = { ok: 0, failed: 0 };
    for (const [name, cases] of Object.entries(CASES)) {
      if (typeof cases === 'string') continue;
      for (const args of cases) {
        const a = args.map((x) => x.replace(/REV$/, rev).replace('NSFILE', join(tmp, 'ns.json')));
        const o = envelope(await tycli([...name.split(' '), ...a]), `tycli --json ${name} ${a.join(' ')}`);
        seen[o.ok ? 'ok' : 'failed']++;
      }
    }
    expect(seen.ok).toBeGreaterThan(30);
    expect(seen.failed).toBeGreaterThan(5);
  }, 300_000);

  it('app prints one envelope with its URL, then keeps serving', async () => {
    const child = spawn(process.execPath, [BIN, '--home', h, '--json', 'app', '--port', '0'], {
      cwd: tmp,
      env: env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      await new Promise<void>((res, rej) => {
        const t = setTimeout(() => rej(new Error(`no line from tycli app: ${out}`)), 30_000);
        child.stdout.on('data', (d) => {
          out += String(d);
          if (out.includes('\n')) {
            clearTimeout(t);
            res();
          }
        });
        child.on('exit', () => {
          clearTimeout(t);
          res();
        });
      });
      const o = envelope({ code: 0, stdout: out, stderr: '' }, 'tycli --json app');
      expect(o).toMatchObject({ ok: true, url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//) });
    } finally {
      child.kill('SIGTERM');
    }
  }, 60_000);
});
