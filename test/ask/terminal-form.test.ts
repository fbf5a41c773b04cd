// An MCP elicitation form answered on a real pseudo-terminal (script -qc): the code, each field, a bad value asked
// again, a secret one not echoed; test side.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const haveScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
const root = resolve(import.meta.dirname, '..', '..');
const SECRET = 'TOPSECRET-4711';

describe.skipIf(!haveScript)('an elicitation form on the terminal (real pseudo-terminal)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ty-form-pty-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const child = join(dir, 'child.mts');
  writeFileSync(
    child,
    [
      `import { TerminalAskChannel } from ${JSON.stringify(join(root, 'node/ask/terminal.ts'))};`,
      `import { AskRouter } from ${JSON.stringify(join(root, 'core/ask/router.ts'))};`,
      `import { Elicitor } from ${JSON.stringify(join(root, 'core/mcp/input/elicit.ts'))};`,
      `import { compilePolicy } from ${JSON.stringify(join(root, 'core/policy/permissions.ts'))};`,
      `const audit = [];`,
      `const e = new Elicitor({ policy: () => compilePolicy([{ scope: 'flags', allow: ['mcp-elicit(srv)'] ` +
        `}]), asker: new AskRouter({ channels: [new TerminalAskChannel()], askWaitMs: 60000 }), audit: ` +
        `{ append: async (r) => void audit.push(r) }, principal: 'mcp:t' });`,
      `const schema = { type: 'object', properties: { name: { type: 'string', title: 'Name' }, age: ` +
        `{ type: 'integer', minimum: 0 }, subscribe: { type: 'boolean', default: false }, api_token: ` +
        `{ type: 'string', title: 'API token' } }, required: ['name', 'age', 'api_token'] };`,
      `const out = await e.elicit('srv', { mode: 'form', message: 'Profile please\\u001b[2J', requestedSchema: schema });`,
      `process.stdout.write('\\nRESULT:' + JSON.stringify({ out, audit: audit.map((a) => a.elicit) }) + '\\n');`,
      `process.exit(0);`,
    ].join('\n'),
  );

  it('typing the code, then each field: a bad value is asked again, an empty one takes the default, a secret-looking one is not echoed', async () => {
    const cmd = `exec ${JSON.stringify(process.execPath)} --import tsx ${JSON.stringify(child)} < /dev/null`;
    const proc = spawn('script', ['-qec', cmd, '/dev/null'], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    const waitFor = async (re: RegExp, from = 0): Promise<RegExpExecArray> => {
      for (let i = 0; i < 4000; i++) {
        const m = re.exec(out.slice(from));
        if (m) return m;
        await new Promise((r) => setTimeout(r, 5));
      }
      throw new Error(`never saw ${re}: ${out}`);
    };
    try {
      const code = (await waitFor(/Type ([A-Z]{4}) to fill in the form/))[1]!;
      expect(out).toContain('Profile please\\x1b[2J');
      expect(out).not.toContain('\u001b[2J');
      proc.stdin.write(`${code}\r`);
      await waitFor(/name> /);
      proc.stdin.write('Ada\r');
      await waitFor(/age> /);
      proc.stdin.write('old\r');
      await waitFor(/age: expected a whole number[\s\S]*age> /);
      proc.stdin.write('36\r');
      await waitFor(/subscribe> /);
      proc.stdin.write('\r');
      const mark = out.length;
      await waitFor(/api_token> /, mark);
      expect(out.slice(mark)).toContain('(not shown as you type)');
      proc.stdin.write(`${SECRET}\r`);
      const m = await waitFor(/RESULT:([^\r\n]*)\r?\n/);
      const res = JSON.parse(m[1]!.trim()) as { out: unknown; audit: unknown[] };
      expect(res.out).toEqual({
        action: 'accept',
        content: { name: 'Ada', age: 36, subscribe: false, api_token: SECRET },
      });
      // never echoed to the terminal, never in the audit
      expect(out.slice(0, out.indexOf('RESULT:'))).not.toContain(SECRET);
      expect(res.audit).toEqual([
        { action: 'accept', fields: ['name', 'age', 'subscribe', 'api_token'], secret: ['api_token'] },
      ]);
    } finally {
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }, 60_000);
});
