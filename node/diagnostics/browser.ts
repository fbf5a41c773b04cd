// Runs the browser security contracts in Debian's Chromium (loopback server, playwright-core) and names them like the
// CLI's; Node host, trusted side.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { TyError } from '../../core/errors.js';

/**
 * One row of the cross-host table. `name` is the cross-host contract name (the same on both hosts for the same
 * property).
 */
export interface HostContractRow {
  host: 'cli' | 'browser';
  name: string;
  /** The host's own check name (browser contract title); absent when it is the contract itself. */
  check?: string;
  ok: boolean;
  detail: string;
}

/**
 * Browser contract groups, named like the CLI contracts where the property is the same
 * (node/diagnostics/contracts.ts): `tool_security_contracts` is "a sandboxed tool cannot reach the host,
 * the network or outlive its call" on both hosts. Matched on the start of the browser contract title.
 */
export const BROWSER_GROUPS: { name: string; requirement: string; prefixes: string[] }[] = [
  {
    name: 'tool_security_contracts',
    requirement:
      'A sandboxed tool in the opaque frame and worker cannot reach the page, storage or the network, cannot escape through hostile values, and is stopped and destroyed at its limits.',
    prefixes: [
      'sandbox frame',
      'worker:',
      'control:',
      'origin is',
      'frame:',
      'host: messages',
      'js-escape:',
      'lifecycle',
      'quickjs:',
      'no request from a sandbox reached the network',
    ],
  },
  {
    name: 'mediated_fetch',
    requirement:
      'Fetch from tool code goes through the mediated fetch: no cookies or referrer, no redirects, size cap while streaming; capability refusals carry a stable code.',
    prefixes: ['fetch transport', 'fetch (worker)', 'capabilities:'],
  },
  {
    name: 'python_escapes',
    requirement:
      'Sandboxed Python (Pyodide) in the worker reaches nothing outside it: import js host globals, ' +
      'js.process, constructor.constructor, js.eval, Pyodide internals, os.system, subprocess and ' +
      'sockets fail closed.',
    prefixes: ['python: escape'],
  },
  {
    name: 'python_sandbox',
    requirement:
      'Python (Pyodide) runs in the worker with the same mediated network, limits, reset and integrity checks.',
    prefixes: ['python:'],
  },
  {
    name: 'asking',
    requirement: 'Questions are shown sanitized, one at a time, with Deny focused.',
    prefixes: ['ask dialog'],
  },
  {
    name: 'popups',
    requirement: 'Popups only for trusted host tools after the gate allows them.',
    prefixes: ['popups'],
  },
  {
    name: 'host_end_to_end',
    requirement: 'Registry, argument checks, mediated fetch, gate and audit work together on IndexedDB.',
    prefixes: ['host end to end'],
  },
  {
    name: 'store_contract',
    requirement: 'The IndexedDB store passes the shared store contract.',
    prefixes: ['store (IndexedDB)'],
  },
];

/** The cross-host contract name of a browser contract title (`browser_other` when no group claims it). */
export function browserGroupOf(title: string): string {
  const t = title.toLowerCase();
  return BROWSER_GROUPS.find((g) => g.prefixes.some((p) => t.startsWith(p.toLowerCase())))?.name ?? 'browser_other';
}

/** True when `filter` (case-insensitive substring) selects a browser contract by its cross-host name or its title. */
export function browserSelected(title: string, filter: string | undefined): boolean {
  if (!filter) return true;
  const f = filter.toLowerCase();
  return browserGroupOf(title).toLowerCase().includes(f) || title.toLowerCase().includes(f);
}

const BEACON_ROW = 'no request from a sandbox reached the network (loopback beacon server)';
const STORE_PREFIX = 'store (IndexedDB): ';

/** The `name: '…'` literals at `indent` spaces in `text` (quotes unescaped). */
function titlesIn(text: string, indent: number): string[] {
  // Biome writes a title with an apostrophe in double quotes, any other in single quotes.
  return [...text.matchAll(new RegExp(`^ {${indent}}name: (['"])(.+)\\1,$`, 'gm'))].map((m) =>
    m[2]!.replace(/\\(['"])/g, '$1'),
  );
}

/**
 * Every browser check title, read from the checkout's sources (no browser needed): the harness's contracts
 * (browser/diagnostics/contracts.ts, with the bundled-revision contract), the IndexedDB store contract
 * (core/store/contract-suite.ts, titled `store (IndexedDB): …`) and the loopback beacon row. These are the titles the
 * diagnostics page runs (test/e2e/diagnostics-browser.test.ts compares them). Undefined without a checkout.
 */
export function browserCheckTitles(root: string | undefined = findRepoRoot()): string[] | undefined {
  if (!root) return undefined;
  try {
    const harness = readFileSync(join(root, 'browser', 'diagnostics', 'contracts.ts'), 'utf8');
    const start = harness.indexOf('const contracts: Contract[] = [');
    const body = start < 0 ? '' : harness.slice(start, harness.indexOf('\n];', start));
    const bundled = titlesIn(readFileSync(join(root, 'browser', 'diagnostics', 'bundled-contract.ts'), 'utf8'), 2);
    const store = titlesIn(readFileSync(join(root, 'core', 'store', 'contract-suite.ts'), 'utf8'), 4).map(
      (t) => `${STORE_PREFIX}${t}`,
    );
    const titles = [...bundled, ...titlesIn(body, 4), ...store];
    return titles.length > 0 ? [...titles, BEACON_ROW] : undefined;
  } catch {
    return undefined;
  }
}

/** The titles of `titles` a run with `filter` reports (the beacon row only beside another check, as a run adds it). */
export function selectedBrowserChecks(titles: readonly string[], filter: string | undefined): string[] {
  const picked = titles.filter((t) => t !== BEACON_ROW && browserSelected(t, filter));
  return picked.length > 0 && titles.includes(BEACON_ROW) && browserSelected(BEACON_ROW, filter)
    ? [...picked, BEACON_ROW]
    : picked;
}

interface DriverModule {
  buildBrowserApp(opts?: { outDir?: string }): Promise<string>;
  serveDir(dir: string): Promise<{ origin: string; beacons: string[]; close(): Promise<void> }>;
  launchChromium(): Promise<{ close(): Promise<void> }>;
  openDiagnostics(
    browser: unknown,
    origin: string,
  ): Promise<{ page: { evaluate<R, A>(fn: (a: A) => R | Promise<R>, arg: A): Promise<R> }; consoleLines: string[] }>;
  CHROMIUM_PATH: string;
}

/**
 * The source checkout holding node/diagnostics/browser-driver.mjs, from here (node/diagnostics or
 * dist/node/diagnostics).
 */
export function findRepoRoot(from: string = dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let d = from, i = 0; i < 6; i++, d = dirname(d)) {
    if (existsSync(join(d, 'node', 'diagnostics', 'browser-driver.mjs')) && existsSync(join(d, 'package.json')))
      return d;
    if (d === dirname(d)) break;
  }
  return undefined;
}

function firstLine(e: unknown): string {
  return (String(e instanceof Error ? e.message : e).split('\n')[0] ?? '').slice(0, 300);
}

async function canImport(spec: string): Promise<boolean> {
  try {
    await import(spec);
    return true;
  } catch {
    return false;
  }
}

export interface BrowserRunOptions {
  /** Case-insensitive substring of the cross-host name or the browser contract title. */
  filter?: string;
  /** Rebuild the browser app with vite even when dist/browser holds a build. */
  rebuild?: boolean;
}

/**
 * Run the selected browser contracts: (re)use the vite build in `<repo>/dist/browser` (built by
 * `npm run build`, else built now), serve it on 127.0.0.1, open the diagnostics page in Debian's Chromium
 * through playwright-core (node/diagnostics/browser-driver.mjs), run each selected contract in the page, and add the
 * loopback beacon row (no request from a sandbox reached the server). Rows carry cross-host names.
 * @returns the rows, empty when the filter selects no browser contract.
 * @throws TyError E_SANDBOX_UNAVAILABLE when the source checkout, vite, playwright-core or Chromium is
 *   missing or Chromium cannot start (the message says which and how to fix it).
 */
export async function runBrowserHostContracts(opts: BrowserRunOptions = {}): Promise<HostContractRow[]> {
  const root = findRepoRoot();
  if (!root)
    throw new TyError(
      'E_SANDBOX_UNAVAILABLE',
      'the browser contracts ship with the tysandbox source checkout (node/diagnostics/browser-driver.mjs), which is not here; run tycli from a checkout',
    );
  const missing = [];
  for (const dep of ['vite', 'playwright-core']) if (!(await canImport(dep))) missing.push(dep);
  if (missing.length)
    throw new TyError(
      'E_SANDBOX_UNAVAILABLE',
      `--browser needs the development dependencies ${missing.join(' and ')}; run npm ci (without --omit=dev) in ${root}`,
    );
  const driver = (await import(
    pathToFileURL(join(root, 'node', 'diagnostics', 'browser-driver.mjs')).href
  )) as DriverModule;
  if (!existsSync(driver.CHROMIUM_PATH))
    throw new TyError(
      'E_SANDBOX_UNAVAILABLE',
      `--browser needs Chromium at ${driver.CHROMIUM_PATH}; install it (Debian: apt-get install chromium)`,
    );

  const outDir = join(root, 'dist', 'browser');
  if (opts.rebuild || !existsSync(join(outDir, 'browser', 'diagnostics', 'index.html')))
    await driver.buildBrowserApp({ outDir });
  const server = await driver.serveDir(outDir);
  let browser: { close(): Promise<void> } | undefined;
  try {
    try {
      browser = await driver.launchChromium();
    } catch (e) {
      throw new TyError('E_SANDBOX_UNAVAILABLE', `Chromium (${driver.CHROMIUM_PATH}) did not start: ${firstLine(e)}`);
    }
    let opened;
    try {
      opened = await driver.openDiagnostics(browser, server.origin);
    } catch (e) {
      throw new TyError(
        'E_SANDBOX_FAILED',
        `the diagnostics page in ${outDir} did not become ready (an incomplete or stale build? run npm run build): ${firstLine(e)}`,
      );
    }
    const { page, consoleLines } = opened;
    type Row = { name: string; ok: boolean; detail: string };
    const titles = await page.evaluate(
      () => (window as unknown as { tyContractNames(): string[] }).tyContractNames(),
      undefined,
    );
    const run = async (filter: string): Promise<Row[]> => {
      try {
        return await page.evaluate(
          (f: string) =>
            (window as unknown as { tyRunContracts(o: { filter?: string }): Promise<Row[]> }).tyRunContracts(
              f ? { filter: f } : {},
            ),
          filter,
        );
      } catch (e) {
        throw new TyError('E_SANDBOX_FAILED', `the browser contracts stopped (the page failed): ${firstLine(e)}`);
      }
    };
    const rows: Row[] = [];
    if (!opts.filter) rows.push(...(await run('')));
    else {
      // One contract at a time by its exact title, so that only the selected ones run.
      for (const t of titles.filter((t) => browserSelected(t, opts.filter)))
        rows.push(...(await run(t)).filter((r) => r.name === t));
      if (browserSelected(STORE_PREFIX, opts.filter))
        rows.push(...(await run(STORE_PREFIX)).filter((r) => r.name.startsWith(STORE_PREFIX)));
    }
    if (rows.length > 0 && browserSelected(BEACON_ROW, opts.filter)) {
      // `control-*` beacons come from the deliberately unprotected control frame; they prove the counter works.
      const leaked = server.beacons.filter((b) => !b.startsWith('control-'));
      const control = server.beacons.length - leaked.length;
      const ranControl = rows.some((r) => r.name.startsWith('control:'));
      const ok = leaked.length === 0 && (!ranControl || control > 0);
      const detail =
        leaked.length > 0
          ? `reached: ${leaked.join(', ')}`
          : ranControl && control === 0
            ? 'the control request never arrived: the counter is not working'
            : `no sandbox requests (control requests counted: ${control})`;
      rows.push({ name: BEACON_ROW, ok, detail });
    }
    const out: HostContractRow[] = rows.map((r) => ({
      host: 'browser',
      name: browserGroupOf(r.name),
      check: r.name,
      ok: r.ok,
      detail: r.detail,
    }));
    if (out.some((r) => !r.ok) && consoleLines.length > 0)
      out.push({
        host: 'browser',
        name: 'browser_other',
        check: 'page console (diagnostic output)',
        ok: true,
        detail: consoleLines.slice(-20).join(' | ').slice(0, 2000),
      });
    return out;
  } finally {
    await browser?.close();
    await server.close();
  }
}
