// docs/protocol.md quotes the error messages `tycli serve` really sends (raw NDJSON on a real server); test side.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, ROOT, cleanEnv, doubler, tempHome, until } from './helpers.js';

const DOC = readFileSync(join(ROOT, 'docs', 'protocol.md'), 'utf8');

/** `"message":"…"` as it appears in the doc's JSON lines. */
const quoted = (m: string): string => `"message":${JSON.stringify(m)}`;

describe('docs/protocol.md examples match tycli serve', () => {
  it('every quoted refusal is the message the server sends, code for code', async () => {
    const home = await tempHome('doc');
    const child = spawn('setsid', [process.execPath, BIN, '--home', home, 'serve'], {
      env: cleanEnv(home),
      cwd: home,
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const lines: Record<string, any>[] = [];
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += String(d);
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        lines.push(JSON.parse(buf.slice(0, nl)) as Record<string, any>);
        buf = buf.slice(nl + 1);
      }
    });
    const send = (id: unknown, method: string, params: unknown) =>
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    const answer = async (id: unknown) => {
      await until(
        () => lines.some((l) => l.id === id && ('result' in l || 'error' in l)),
        `the answer to ${String(id)}`,
        60_000,
      );
      return lines.find((l) => l.id === id && ('result' in l || 'error' in l))!;
    };
    try {
      send(1, 'initialize', { protocolVersion: 'tysandbox/0', client: { name: 'old', version: '1' } });
      const version = (await answer(1)).error;
      expect(DOC).toContain(quoted(version.message));
      send(2, 'initialize', { protocolVersion: 'tysandbox/1', client: { name: 'my-ide', version: '1.2.0' } });
      await answer(2);

      send(3, 'tool/add', { manifest: doubler('we ird') });
      const badName = (await answer(3)).error;
      expect(badName).toMatchObject({ code: -32000, data: { code: 'E_INVALID_MANIFEST', path: 'name' } });
      expect(badName.message).toContain('(got "we ird")');
      expect(DOC).toContain(quoted(badName.message));

      const m = doubler('double') as { execution: Record<string, unknown> };
      send(4, 'tool/add', { manifest: { ...m, execution: { ...m.execution, source: 'x'.repeat(4_194_305) } } });
      const big = (await answer(4)).error;
      expect(big).toMatchObject({ data: { code: 'E_INVALID_MANIFEST', path: 'execution.source' } });
      expect(DOC).toContain(quoted(big.message));

      // trusted-native without `entry`: the documented execution.kind refusal, not a schema complaint about entry
      send(5, 'tool/add', {
        manifest: {
          name: 'nat',
          description: 'n',
          parameters: { type: 'object' },
          execution: { kind: 'trusted-native' },
        },
      });
      const native = (await answer(5)).error;
      expect(native).toMatchObject({ code: -32000, data: { code: 'E_INVALID_MANIFEST', path: 'execution.kind' } });
      expect(DOC).toContain(quoted(native.message));

      send(6, 'tool/show', { ref: 'bagaaieraxxxxxxxxx' });
      const show = await answer(6);
      expect(show.error).toMatchObject({ data: { code: 'E_UNKNOWN_TOOL' } });
      expect(show.error.message).not.toContain('no tool named');
      expect(DOC).toContain(JSON.stringify(show).replace('"id":6', '"id":51'));

      for (const id of ['x'.repeat(257), {}, 1.5])
        child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method: 'tool/list', params: {} }) + '\n');
      send(7, 'tool/run', { ref: 'double', arguments: { x: 1 }, timeoutMs: 99_999_999 });
      const tooLong = await answer(7);
      expect(tooLong.error).toMatchObject({ code: -32602, data: { code: 'E_USAGE', path: 'timeoutMs' } });
      expect(DOC).toContain(JSON.stringify(tooLong.error));
      const badIds = lines.filter((l) => l.id === null);
      expect(badIds).toHaveLength(3);
      for (const l of badIds) {
        expect(l.error.message).toContain('at most 256 characters');
        expect(DOC).toContain(JSON.stringify(l));
      }

      // moving an active binding with nobody to ask
      send(8, 'tool/add', { manifest: doubler('double') });
      await answer(8);
      send(9, 'tool/add', { manifest: doubler('double', 3) });
      const second = (await answer(9)).result as { revision: string };
      send(10, 'tool/activate', { name: 'double', revision: second.revision });
      const act = (await answer(10)).error;
      expect(act).toMatchObject({ data: { code: 'E_APPROVAL_REQUIRED', rule: 'registry(activate:protocol:my-ide)' } });
      expect(act.message).not.toMatch(/\(.*\(/); // no nested brackets
      expect(DOC).toContain(quoted(act.message));

      // $/cancel of a run in flight
      send(11, 'tool/run', { ref: 'double', arguments: { x: 1, wait: 30_000 } });
      await until(
        () => lines.some((l) => l.method === '$/log' && l.params.id === 11),
        'run 11 to log (its sandbox is running)',
        60_000,
      );
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: '$/cancel', params: { id: 11 } }) + '\n');
      const cancelled = (await answer(11)).error;
      expect(cancelled).toMatchObject({ code: -32000, data: { code: 'E_ABORTED' } });
      expect(DOC).toContain(quoted(cancelled.message));
    } finally {
      child.stdin.end();
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    }
  }, 120_000);

  it('the -32000 table lists E_USAGE', () => {
    const row = DOC.split('\n').find((l) => l.startsWith('| -32000 |'))!;
    expect(row).toContain('E_USAGE');
  });
});
