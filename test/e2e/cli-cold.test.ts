// What a `tycli run` loads: the bundled command line, no fetch stack for a tool that never fetches, no zod (no schema
// built); test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runProcess } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
let tmp: string;

/**
 * Every module file a `node --import <counter> bin/tycli.mjs ARGS` loads (ES modules through a load hook, CommonJS from
 * the require cache), and every file it opens or reads whole through node:fs (the bundle and its code cache are read
 * so).
 */
async function loadedModules(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; files: string[]; opened: string[]; stderr: string }> {
  const log = join(tmp, `loaded-${Math.random().toString(36).slice(2)}.txt`);
  const hooks = `import { appendFileSync } from 'node:fs'; export async function load(url, c, next) { appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, c); }`;
  const pre = join(tmp, `pre-${Math.random().toString(36).slice(2)}.mjs`);
  await writeFile(
    pre,
    `import { register, createRequire, syncBuiltinESMExports } from 'node:module'; import fs, { appendFileSync } from 'node:fs';
     register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});
     const req = createRequire(import.meta.url);
     for (const k of ['openSync', 'readFileSync']) { const orig = fs[k]; fs[k] = function (p, ...r) {
       if (typeof p === 'string') appendFileSync(${JSON.stringify(log)}, 'open:' + p + '\\n');
       return orig.call(this, p, ...r); }; }
     syncBuiltinESMExports();
     process.on('exit', () => appendFileSync(${JSON.stringify(log)}, Object.keys(req.cache).map((f) => 'cjs:' + f).join('\\n') + '\\n'));`,
  );
  const r = await runProcess(
    process.execPath,
    ['--import', pathToFileURL(pre).href, BIN, ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, TYCLI_HOME: join(tmp, 'home'), ...env },
    tmp,
  );
  const lines = existsSync(log) ? (await readFile(log, 'utf8')).split('\n') : [];
  const files = [
    ...new Set(
      lines
        .filter((l) => l.startsWith('file:') || l.startsWith('cjs:'))
        .map((l) => (l.startsWith('cjs:') ? l.slice(4) : fileURLToPath(l))),
    ),
  ];
  const opened = [...new Set(lines.filter((l) => l.startsWith('open:')).map((l) => l.slice(5)))];
  return { code: r.code, files, opened, stderr: r.stderr };
}

/**
 * The original modules of the bundled command line (dist/cli/tycli.cjs) that a `bin/tycli.mjs ARGS` evaluated, from
 * V8's
 * coverage (NODE_V8_COVERAGE): esbuild wraps each module in a function named by its path (`"dist/x.js"() {...}`,
 * `"node_modules/y.js"(exports, module) {...}`) called on first import; a module the bundle does not wrap is counted
 * as evaluated. Absolute paths; the source map says which modules the bundle holds.
 */
async function evaluatedSources(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string; sources: string[]; bundled: string[] }> {
  const cov = await mkdtemp(join(tmp, 'cov-'));
  const r = await runProcess(
    process.execPath,
    [BIN, ...args],
    {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: tmp,
      TYCLI_HOME: join(tmp, 'home'),
      NODE_V8_COVERAGE: cov,
      ...env,
    },
    tmp,
  );
  const bundle = join(ROOT, 'dist', 'cli', 'tycli.cjs');
  const text = readFileSync(bundle, 'utf8');
  const wrapped = new Set(
    [...text.matchAll(/^\s*"([^"]+)"\((?:exports\d*(?:, module\d*)?)?\) \{$/gm)].map((m) => m[1]),
  );
  const called = new Set<string>();
  for (const f of readdirSync(cov)) {
    const { result } = JSON.parse(readFileSync(join(cov, f), 'utf8')) as {
      result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[];
    };
    for (const s of result)
      if (s.url === bundle || s.url === pathToFileURL(bundle).href)
        for (const fn of s.functions) if (fn.ranges[0]!.count > 0) called.add(fn.functionName);
  }
  const map = JSON.parse(readFileSync(`${bundle}.map`, 'utf8')) as { sources: string[] };
  const rel = (s: string) => relative(ROOT, resolve(join(ROOT, 'dist', 'cli'), s));
  // a plugin's virtual module (`zod-english-only:PATH`) is wrapped under its own name, not under a path
  const entries = map.sources.map((raw) => ({ raw, rel: rel(raw) })).filter((e) => !e.rel.startsWith('..'));
  const ran = (e: { raw: string; rel: string }) =>
    (!wrapped.has(e.rel) && !wrapped.has(e.raw)) || called.has(e.rel) || called.has(e.raw);
  return {
    code: r.code,
    stderr: r.stderr,
    bundled: entries.map((e) => join(ROOT, e.rel)),
    sources: entries.filter(ran).map((e) => join(ROOT, e.rel)),
  };
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'tycli.cjs')))
    throw new Error('dist/cli is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-cold-'));
  const r = await runProcess(
    process.execPath,
    [BIN, 'tool', 'add', join(ROOT, 'tools', 'csv-stats', 'manifest.json')],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, TYCLI_HOME: join(tmp, 'home') },
    tmp,
  );
  expect(r.code, r.stderr).toBe(0);
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const RUN = ['run', 'csv-stats', '--args', '{"csv":"a,b\\n1,2\\n"}'];
/** Modules whose only purpose is zod schemas (they load when a command parses with them, never on a plain run). */
const SCHEMA_ONLY =
  /\/(protocol\/(errors|wire|manifest|task|registration)|core\/(audit\/schema|manifest\/parse)|node\/(settings\/schema|ask\/schemas))\.(js|ts)$/;

describe('tycli run loads only what the call needs', () => {
  it('runs the bundled command line (dist/cli/tycli.cjs with its code cache), not the hundreds of compiled modules', async () => {
    const r = await loadedModules(RUN);
    expect(r.code, r.stderr).toBe(0);
    expect(r.opened).toContain(join(ROOT, 'dist', 'cli', 'tycli.cjs'));
    expect(r.opened).toContain(join(ROOT, 'dist', 'cli', 'tycli.cjs.cache'));
    // no module of dist/ goes through node's loaders
    expect(r.files.filter((f) => f.includes(`${join(ROOT, 'dist')}/`))).toEqual([]);
    expect(r.files.filter((f) => f.includes('/node_modules/'))).toEqual([]);
  });

  it('a tool that never fetches evaluates no fetch stack (undici), no install-time parser (acorn), and no zod: a run builds no schema', async () => {
    const r = await evaluatedSources(RUN);
    expect(r.code, r.stderr).toBe(0);
    // coverage is read: the CID library ran
    expect(r.sources.some((s) => s.includes('/node_modules/multiformats/'))).toBe(true);
    // in the bundle, for calls that fetch
    expect(r.bundled.some((s) => s.includes('/node_modules/undici/'))).toBe(true);
    expect(r.sources.filter((s) => s.includes('/node_modules/undici/'))).toEqual([]);
    expect(r.sources.filter((s) => s.includes('/node_modules/acorn/'))).toEqual([]);
    // The stored manifest, the sandbox's messages and the audit records are checked by hand (core/manifest/check.ts,
    // core/exec/wire-check.ts, core/audit/record.ts isAuditRecord), each held to its zod schema by its own test.
    // in the bundle, for commands that parse with it
    expect(r.bundled.some((s) => s.includes('/node_modules/zod/'))).toBe(true);
    expect(r.sources.filter((s) => s.includes('/node_modules/zod/'))).toEqual([]);
    expect(r.sources.filter((s) => SCHEMA_ONLY.test(s))).toEqual([]);
    expect(r.bundled.some((s) => s.endsWith('/node_modules/zod/v4/locales/en.js'))).toBe(true);
    expect(r.bundled.filter((s) => /\/node_modules\/zod\/v4\/locales\/(?!en\.js|index\.js)/.test(s))).toEqual([]);
  });

  it('a tool without schema patterns loads no re2js, source-map-js or diff, and the bundle has no zod compile or fromJSONSchema module', async () => {
    const r = await evaluatedSources(RUN);
    expect(r.code, r.stderr).toBe(0);
    // coverage is read: the argument validator ran
    expect(r.sources.some((s) => s.includes('/node_modules/@cfworker/json-schema/'))).toBe(true);
    expect(r.sources.filter((s) => /\/node_modules\/(re2js|source-map-js|diff)\//.test(s))).toEqual([]);
    // zod's compile module is left as an empty module wrapper (its code dropped), fromJSONSchema not bundled at all
    const text = readFileSync(join(ROOT, 'dist', 'cli', 'tycli.cjs'), 'utf8');
    expect(text).toContain('"node_modules/zod/v4/core/schemas.js"() {');
    expect(
      text.match(/"node_modules\/zod\/v4\/core\/compile\.js"\(\) \{([\s\S]*?)\n {2}\}\n\}\);/)?.[1]?.trim() ?? '',
    ).toBe('');
    expect(r.bundled.filter((s) => /\/node_modules\/zod\/v4\/classic\/from-json-schema\.js$/.test(s))).toEqual([]);
    const l = await loadedModules(RUN);
    expect(l.files.filter((f) => f.includes('/node_modules/'))).toEqual([]); // nor from node_modules at run time
  });

  it("with a settings file (rules, a hook) a run still evaluates no zod; a settings file the hand check cannot vouch for gets the schema's message", async () => {
    const home = join(tmp, 'home-settings');
    const add = await runProcess(
      process.execPath,
      [BIN, 'tool', 'add', join(ROOT, 'tools', 'csv-stats', 'manifest.json')],
      { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, TYCLI_HOME: home },
      tmp,
    );
    expect(add.code, add.stderr).toBe(0);
    await mkdir(join(home, 'config'), { recursive: true, mode: 0o700 });
    const settings = join(home, 'config', 'settings.json');
    await writeFile(
      settings,
      JSON.stringify({
        permissions: { allow: ['tool(csv-stats)'], deny: ['fetch(write:*)'] },
        hooks: { postToolUse: [{ matcher: 'csv-*', command: 'true' }] },
        ask_wait: 60_000,
      }),
      { mode: 0o600 },
    );
    const r = await evaluatedSources(RUN, { TYCLI_HOME: home });
    expect(r.code, r.stderr).toBe(0);
    // the file was read and checked
    expect(r.sources.some((s) => s.endsWith('/dist/node/settings/check.js'))).toBe(true);
    expect(r.sources.filter((s) => s.includes('/node_modules/zod/'))).toEqual([]);
    expect(r.sources.filter((s) => SCHEMA_ONLY.test(s))).toEqual([]);
    await writeFile(settings, JSON.stringify({ permissions: { allow: ['csv-stats'] } }), { mode: 0o600 });
    const bad = await runProcess(
      process.execPath,
      [BIN, ...RUN],
      { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, TYCLI_HOME: home },
      tmp,
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('E_INVALID_SETTINGS');
    expect(bad.stderr).toContain('permissions.allow[0]: invalid rule "csv-stats"');
  });

  it('the compiled modules (TYCLI_UNBUNDLED=1) load no undici and no zod either for that call', async () => {
    const r = await loadedModules(RUN, { TYCLI_UNBUNDLED: '1' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.files).toContain(join(ROOT, 'dist', 'node', 'cli', 'main.js'));
    expect(r.files).toContain(join(ROOT, 'dist', 'core', 'revisions', 'registry.js')); // the hook saw the run's modules
    expect(r.files.filter((f) => f.includes('/node_modules/undici/'))).toEqual([]);
    expect(r.files.filter((f) => f.includes('/node_modules/zod/'))).toEqual([]);
    expect(r.files.filter((f) => SCHEMA_ONLY.test(f))).toEqual([]);
  });
});
