// Unit tests for tycli output helpers: error text and JSON lines are inert whatever the output is; test side.
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { fail, outJson } from './output.js';
import type { CliContext } from './types.js';

function ctx(json: boolean): CliContext & { text(): { out: string; err: string } } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += String(d)));
  stderr.on('data', (d) => (err += String(d)));
  return {
    io: { stdout, stderr, stdin: new PassThrough(), interactive: false },
    cwd: '/',
    env: {},
    globals: { home: '/tmp/h', json, allow: [], deny: [] },
    text: () => ({ out, err }),
  };
}
const HOSTILE = 'X\u001b]0;PWN\u0007Y\u202eZ\u001b[31mRED\u2028\u200b\u0085';

describe('tycli output', () => {
  it('an error message is inert on stderr even when it is not a terminal', () => {
    const c = ctx(false);
    expect(fail(c, 'E_TOOL_FAILED', HOSTILE)).toBe(1);
    const err = c.text().err;
    expect(err).toMatch(/^error\[E_TOOL_FAILED\]: X/);
    expect(err).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b\u202e\u2028]/);
    expect(err).toContain('\\x1b');
  });
  it('a --json line carries no raw hidden character and parses back to the same value', () => {
    const c = ctx(true);
    outJson(c, { ok: false, error: { code: 'E_TOOL_FAILED', message: HOSTILE } });
    const line = c.text().out;
    expect(line.trimEnd()).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u200b\u202e\u2028]/);
    expect(JSON.parse(line)).toEqual({ ok: false, error: { code: 'E_TOOL_FAILED', message: HOSTILE } });
  });
});
