// Core and protocol speak of no particular host: no `tycli`, no command-line flag in their strings; each host renders its own hint; test side.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TyError } from '../core/errors.js';
import { askRefusalError } from '../core/ask.js';
import { cliHint } from '../node/cli/hints.js';
import { browserHint } from '../browser/hints.js';

const root = new URL('..', import.meta.url).pathname;
function files(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(join(root, p)).isDirectory()) return files(p);
    return /\.(ts|json|mjs)$/.test(f) && !/\.test\.ts$/.test(f) ? [p] : [];
  });
}

describe('host-neutral core', () => {
  it('no file in core/ or protocol/ mentions tycli (strings, messages and comments)', () => {
    const hits = [...files('core'), ...files('protocol')].flatMap((f) =>
      readFileSync(join(root, f), 'utf8')
        .split('\n')
        .map((l, i) => [f, i + 1, l] as const)
        .filter(([, , l]) => /tycli/i.test(l)),
    );
    expect(hits.map(([f, n, l]) => `${f}:${n}: ${l.trim()}`)).toEqual([]);
  });
  it('a refusal carries the facts; the CLI names --allow, the browser names createBrowserHost rules', () => {
    const e = askRefusalError('fetch https://api.example.com', { allow: false, reason: 'no-channel', suggestedRule: 'fetch(read:https://api.example.com)' });
    expect(e.message).not.toMatch(/tycli|--allow/);
    expect(cliHint(e)).toContain("--allow 'fetch(read:https://api.example.com)'");
    expect(cliHint(e)).toContain('tycli questions --watch');
    const b = browserHint(e.code, e.data)!;
    expect(b).toContain('createBrowserHost({ rules');
    expect(b).toContain('host.approvals');
    expect(b).not.toMatch(/tycli|--allow/);
  });
  it('a pause: tycli resume on the command line, host.resume in the browser', () => {
    const e = new TyError('E_PAUSED', 'calls to "weather" are paused after 10 refusals within 60 s; a person can resume them', { paused: 'weather' });
    expect(cliHint(e)).toBe('resume with: tycli resume weather');
    expect(browserHint(e.code, e.data)).toBe('resume with host.resume("weather")');
  });
});
