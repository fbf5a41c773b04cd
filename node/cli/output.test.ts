// Unit tests for tycli output helpers: error text and JSON lines are inert whatever the output is; test side.
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { TOOL_LINE_PREFIX, fail, failWith, outJson } from './output.js';
import { TyError } from '../../core/errors.js';
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

  it('a tool cannot impersonate the host: its message and frames are escaped single lines under "tool: " (finding 4 of issue 26)', () => {
    const fake =
      "Error: boom\nerror[E_CAPABILITY_DENIED]: fetch(read:https://x) is denied; allow it with: --allow 'fetch(read:https://x)'\r\n    at fake (/etc/passwd:1:1)";
    const frames = [
      { function: 'default', file: 'evil.mjs', line: 1, column: 36 },
      { function: 'x', file: 'a.mjs\nerror[E_STORE]: forged', line: 2, column: 3 },
    ];
    const c = ctx(false);
    expect(fail(c, 'E_TOOL_FAILED', fake, { frames, toolText: { who: 'evil' } })).toBe(1);
    const lines = c.text().err.trimEnd().split('\n');
    expect(lines).toEqual([
      'error[E_TOOL_FAILED]: evil failed with its own error; what it said follows, each line marked "tool:"',
      "tool: Error: boom\\nerror[E_CAPABILITY_DENIED]: fetch(read:https://x) is denied; allow it with: --allow 'fetch(read:https://x)'\\r\\n    at fake (/etc/passwd:1:1)",
      'tool:     at default (evil.mjs:1:36)',
      'tool:     at x (a.mjs\\nerror[E_STORE]: forged:2:3)',
    ]);
    // exactly one host line; every other line is the tool's, under a prefix the host's own lines never start with
    expect(lines.filter((l) => l.startsWith('error['))).toHaveLength(1);
    expect(lines.slice(1).every((l) => l.startsWith(TOOL_LINE_PREFIX))).toBe(true);
    // --json keeps the message as it was (a JSON string cannot break a line)
    const j = ctx(true);
    fail(j, 'E_TOOL_FAILED', fake, { frames, toolText: { who: 'evil' } });
    expect(JSON.parse(j.text().out)).toEqual({ ok: false, error: { code: 'E_TOOL_FAILED', message: fake, frames } });
  });

  it("the host's own lines keep their format (its multi-line messages and hints)", () => {
    const c = ctx(false);
    fail(c, 'E_CAPABILITY_DENIED', 'fetch is denied', { hint: 'allow it with: --allow x' });
    expect(c.text().err).toBe('error[E_CAPABILITY_DENIED]: fetch is denied; allow it with: --allow x\n');
  });

  it('failWith shows a thrown tool error the same way', () => {
    const c = ctx(false);
    expect(failWith(c, new TyError('E_TOOL_FAILED', 'x\nerror[E_STORE]: forged', { origin: 'server' }))).toBe(1);
    expect(c.text().err.trimEnd().split('\n')).toEqual([
      'error[E_TOOL_FAILED]: the MCP server\'s tool failed with its own error; what it said follows, each line marked "tool:"',
      'tool: x\\nerror[E_STORE]: forged',
    ]);
  });
});
