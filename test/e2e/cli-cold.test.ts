// What a `tycli run` loads: the bundled command line, no fetch stack for a tool that never fetches, no zod locales; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runProcess } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
let tmp: string;

/** Every module file a `node --import <counter> bin/tycli.mjs ARGS` loads (ES modules through a load hook, CommonJS from the require cache). */
async function loadedModules(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; files: string[]; stderr: string }> {
  const log = join(tmp, `loaded-${Math.random().toString(36).slice(2)}.txt`);
  const hooks = `import { appendFileSync } from 'node:fs'; export async function load(url, c, next) { appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, c); }`;
  const pre = join(tmp, `pre-${Math.random().toString(36).slice(2)}.mjs`);
  await writeFile(
    pre,
    `import { register, createRequire } from 'node:module'; import { appendFileSync } from 'node:fs';
     register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});
     const req = createRequire(import.meta.url);
     process.on('exit', () => appendFileSync(${JSON.stringify(log)}, Object.keys(req.cache).map((f) => 'cjs:' + f).join('\\n') + '\\n'));`,
  );
  const r = await runProcess(process.execPath, ['--import', pathToFileURL(pre).href, BIN, ...args], { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, TYCLI_HOME: join(tmp, 'home'), ...env }, tmp);
  const text = existsSync(log) ? await readFile(log, 'utf8') : '';
  const files = [...new Set(text.split('\n').filter((l) => l.startsWith('file:') || l.startsWith('cjs:')).map((l) => (l.startsWith('cjs:') ? l.slice(4) : fileURLToPath(l))))];
  return { code: r.code, files, stderr: r.stderr };
}

/** The original sources bundled into the loaded dist/cli files, from their source maps (node/cli/build-bundle.mjs writes them). */
function bundledSources(files: string[]): string[] {
  return files.filter((f) => f.includes(`${join('dist', 'cli')}/`)).flatMap((f) => (JSON.parse(readFileSync(`${f}.map`, 'utf8')) as { sources: string[] }).sources.map((s) => resolve(join(f, '..'), s)));
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'tycli.mjs'))) throw new Error('dist/cli is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-cold-'));
  const r = await runProcess(process.execPath, [BIN, 'tool', 'add', join(ROOT, 'tools', 'csv-stats', 'manifest.json')], { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, TYCLI_HOME: join(tmp, 'home') }, tmp);
  expect(r.code, r.stderr).toBe(0);
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const RUN = ['run', 'csv-stats', '--args', '{"csv":"a,b\\n1,2\\n"}'];

describe('tycli run loads only what the call needs', () => {
  it('runs the bundled command line (dist/cli/tycli.mjs), not the hundreds of compiled modules', async () => {
    const r = await loadedModules(RUN);
    expect(r.code, r.stderr).toBe(0);
    expect(r.files).toContain(join(ROOT, 'dist', 'cli', 'tycli.mjs'));
    expect(r.files.filter((f) => f.includes(`${join(ROOT, 'dist', 'node')}/`))).toEqual([]);
    expect(r.files.filter((f) => f.includes('/node_modules/'))).toEqual([]);
  });

  it('a tool that never fetches loads no fetch stack (undici), no install-time parser (acorn), and zod without its locales other than English', async () => {
    const r = await loadedModules(RUN);
    expect(r.code, r.stderr).toBe(0);
    const sources = bundledSources(r.files);
    expect(sources.some((s) => s.includes('/node_modules/zod/'))).toBe(true); // the map is read: zod is there
    expect(sources.filter((s) => s.includes('/node_modules/undici/'))).toEqual([]);
    expect(sources.filter((s) => s.includes('/node_modules/acorn/'))).toEqual([]);
    expect(sources.filter((s) => /\/node_modules\/zod\/v4\/locales\/(?!en\.js|index\.js)/.test(s))).toEqual([]);
  });

  it('a tool without schema patterns loads no re2js, source-map-js or diff, and of zod not its compile or fromJSONSchema modules', async () => {
    const r = await loadedModules(RUN);
    expect(r.code, r.stderr).toBe(0);
    const sources = bundledSources(r.files);
    expect(sources.some((s) => s.includes('/node_modules/zod/v4/core/schemas.js'))).toBe(true); // the map is read
    expect(sources.filter((s) => /\/node_modules\/(re2js|source-map-js|diff)\//.test(s))).toEqual([]);
    expect(sources.filter((s) => /\/node_modules\/zod\/v4\/(core\/compile|classic\/from-json-schema)\.js$/.test(s))).toEqual([]);
    expect(r.files.filter((f) => f.includes('/node_modules/'))).toEqual([]); // nor from node_modules at run time
  });

  it('the compiled modules (TYCLI_UNBUNDLED=1) load no undici either for that call', async () => {
    const r = await loadedModules(RUN, { TYCLI_UNBUNDLED: '1' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.files).toContain(join(ROOT, 'dist', 'node', 'cli', 'main.js'));
    expect(r.files.filter((f) => f.includes('/node_modules/undici/'))).toEqual([]);
  });
});
