// Core and protocol speak of no particular host: no `tycli`, no command-line flag in their strings; each host renders
// its own hint; test side.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';
import { TyError } from '../../core/errors.js';
import { askRefusalError } from '../../core/ask/router.js';
import { cliHint } from '../../node/cli/hints.js';
import { browserHint } from '../../browser/hints.js';

const root = new URL('../..', import.meta.url).pathname;
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
    const e = askRefusalError('fetch https://api.example.com', {
      allow: false,
      reason: 'no-channel',
      suggestedRule: 'fetch(read:https://api.example.com)',
    });
    expect(e.message).not.toMatch(/tycli|--allow/);
    expect(e.message).toContain('the rule that allows it without asking: fetch(read:https://api.example.com)');
    expect(cliHint(e)).toContain('pass that rule quoted to --allow');
    expect(cliHint(e)).toContain('tycli questions --watch');
    const b = browserHint(e.code, e.data)!;
    expect(b).toContain('createBrowserHost({ rules');
    expect(b).toContain('host.approvals');
    expect(b).not.toMatch(/tycli|--allow/);
  });
  it('a pause: tycli resume on the command line, host.resume in the browser', () => {
    const e = new TyError(
      'E_PAUSED',
      'calls to "weather" are paused after 10 refusals within 60 s; a person can resume them',
      { paused: 'weather' },
    );
    expect(cliHint(e)).toBe('resume with: tycli resume weather');
    expect(browserHint(e.code, e.data)).toBe('resume with host.resume("weather")');
  });
});

/** Packages that only run on Node (their own use of node:* or of a Node API at import time). */
const NODE_ONLY = [
  /^env-paths$/,
  /^undici($|\/)/,
  /^selfsigned$/,
  /^@modelcontextprotocol\/sdk\/(client|server)\/stdio(\.js)?$/,
  /^@modelcontextprotocol\/(client|server)\/stdio$/,
  /^cross-spawn$/,
  /^@deno\//,
  /^deno$/,
];
const BUILTINS = new Set(builtinModules);
/** Import specifiers of a TypeScript file (static imports, re-exports and dynamic imports). */
function importsOf(text: string): string[] {
  return [
    ...text.matchAll(
      /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g,
    ),
  ].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
}
/** Bundle `entry` for the browser (esbuild, platform browser): resolves the whole import graph, packages included. */
async function browserBundle(entry: string): Promise<{ ok: true; inputs: string[] } | { ok: false; errors: string[] }> {
  try {
    const r = await build({
      entryPoints: [entry],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    return { ok: true, inputs: Object.keys(r.metafile.inputs) };
  } catch (e) {
    return { ok: false, errors: ((e as { errors?: { text: string }[] }).errors ?? []).map((x) => x.text) };
  }
}

describe('core/mcp holds the MCP bridge and needs no Node', () => {
  const mcpFiles = files('core/mcp').filter((f) => f.endsWith('.ts'));
  it('the bridge, its upstream session, routes, sessions and transports live in core/mcp/', () => {
    for (const f of [
      'bridge/bridge.ts',
      'bridge/context.ts',
      'bridge/server.ts',
      'bridge/calls.ts',
      'bridge/gate.ts',
      'bridge/direct.ts',
      'bridge/routes.ts',
      'upstream/session.ts',
      'upstream/options.ts',
      'upstream/transport.ts',
      'wire/guarded-transport.ts',
      'wire/serve-session.ts',
      'wire/messages.ts',
      'wire/session-clock.ts',
      'bridge/naming.ts',
      'bridge/namespace.ts',
      'bridge/args.ts',
      'upstream/pool.ts',
      'index.ts',
    ])
      expect(mcpFiles).toContain(join('core/mcp', f));
  });
  it('no file under core/mcp/ imports node:*, a Node built-in or a Node-only package', () => {
    const bad = mcpFiles.flatMap((f) =>
      importsOf(readFileSync(join(root, f), 'utf8'))
        .filter(
          (spec) =>
            spec.startsWith('node:') ||
            BUILTINS.has(spec) ||
            BUILTINS.has(spec.split('/')[0] ?? '') ||
            NODE_ONLY.some((re) => re.test(spec)) ||
            /(^|\/)node\//.test(spec) ||
            /(^|\/)browser\//.test(spec),
        )
        .map((spec) => `${f}: ${spec}`),
    );
    expect(bad).toEqual([]);
  });
  it('the import checker and the browser bundle see a node:* import (so the checks can fail)', async () => {
    expect(
      importsOf("import { x } from 'node:fs';\nexport { y } from './y.js';\nconst z = await import('node:path');"),
    ).toEqual(['node:fs', './y.js', 'node:path']);
    const bad = await browserBundle(join(root, 'test/fixtures/node-import.ts'));
    expect(bad.ok).toBe(false);
  });
  it('core/mcp/index.ts bundles for the browser, packages included, with no Node built-in in its graph', async () => {
    const r = await browserBundle(join(root, 'core/mcp/index.ts'));
    expect(r.ok ? [] : r.errors).toEqual([]);
    if (!r.ok) return;
    expect(
      r.inputs.filter(
        (i) =>
          i.startsWith('node:') ||
          (/(^|\/)node\/(?!_modules)/.test(i.replace(/node_modules/g, 'node_modules')) && !i.includes('node_modules')),
      ),
    ).toEqual([]);
    // the bridge itself is in the bundle, not only its helpers
    expect(r.inputs).toContain('core/mcp/bridge/bridge.ts');
    expect(r.inputs).toContain('core/mcp/upstream/session.ts');
  });
});
