// The supply-chain settings hold as npm itself reads them: release-age floor, install-script policy, pinned CI Node,
// audits, SBOM; test side.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines?: { node?: string };
  allowScripts?: Record<string, boolean>;
  scripts: Record<string, string>;
};
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { name?: string; hasInstallScript?: boolean }>;
};

/** The value npm itself uses in the project folder (project .npmrc over user and global config). */
async function npmConfig(key: string): Promise<string> {
  const { stdout } = await run('npm', ['config', 'get', key], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? ROOT },
  });
  return stdout.trim();
}

describe('supply chain', () => {
  it('npm installs only versions published at least 7 days ago (effective min-release-age)', async () => {
    expect(await npmConfig('min-release-age')).toBe('7');
  });

  it('install scripts run only where package.json allowScripts says so, and an unreviewed one fails the install', async () => {
    expect(await npmConfig('strict-allow-scripts')).toBe('true');
    const withScripts = Object.entries(lock.packages)
      .filter(([k, v]) => k !== '' && v.hasInstallScript)
      .map(([k, v]) => v.name ?? k.replace(/^.*node_modules\//, ''));
    expect(withScripts.length).toBeGreaterThan(0);
    for (const name of withScripts)
      expect(pkg.allowScripts?.[name], `${name} has install scripts: review it in allowScripts`).toBeTypeOf('boolean');
    // None is needed: deno's binary comes in @deno/<platform>, esbuild's in @esbuild/<platform>.
    expect(Object.values(pkg.allowScripts ?? {}).filter((v) => v)).toEqual([]);
  });

  it('CI runs on the Node version pinned in .nvmrc, inside the engines range', async () => {
    const pinned = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    const min = /^>=(\d+)\.(\d+)/.exec(pkg.engines?.node ?? '');
    expect(min).not.toBeNull();
    const [maj, minor] = pinned.split('.').map(Number) as [number, number];
    expect(maj > Number(min![1]) || (maj === Number(min![1]) && minor >= Number(min![2]))).toBe(true);
    const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
    expect(ci).toContain('.nvmrc');
    expect(ci).toContain('bash .ci/audit');
  });

  it('.ci/audit runs npm audit on production dependencies failing on high, and npm audit signatures', () => {
    const audit = readFileSync(join(ROOT, '.ci', 'audit'), 'utf8');
    expect(audit).toContain('npm audit --omit=dev --audit-level=high');
    expect(audit).toContain('npm audit signatures');
    expect(audit).toMatch(/fail\*\).*status=1/);
  });

  it('the build writes a CycloneDX SBOM of every locked package, development ones marked (dist/sbom.cdx.json)', () => {
    expect(pkg.scripts.build).toContain('npm run -s sbom');
    const file = join(ROOT, 'dist', 'sbom.cdx.json');
    expect(existsSync(file), 'run npm run build first').toBe(true);
    const sbom = JSON.parse(readFileSync(file, 'utf8')) as {
      bomFormat: string;
      components: { name: string; version: string; properties?: { name: string; value: string }[] }[];
    };
    expect(sbom.bomFormat).toBe('CycloneDX');
    // the version the project itself depends on: a development dependency may bring another version of the same package
    const deps = (pkg as { dependencies?: Record<string, string> }).dependencies ?? {};
    const dev = (name: string) =>
      sbom.components
        .find((c) => c.name === name && (deps[name] === undefined || c.version === deps[name]))
        ?.properties?.some((p) => p.name === 'cdx:npm:package:development' && p.value === 'true');
    for (const prod of ['zod', 'multiformats', '@modelcontextprotocol/server', '@modelcontextprotocol/client'])
      expect(dev(prod), prod).toBe(false);
    // the 1.x MCP SDK is a test client only (test/mcp/eras); product code is on the 2.x packages
    for (const devOnly of ['vitest', '@modelcontextprotocol/sdk']) expect(dev(devOnly), devOnly).toBe(true);
    const locked = new Set(
      Object.entries(lock.packages)
        .filter(([k]) => k !== '')
        .map(([k, v]) => `${v.name ?? k.replace(/^.*node_modules\//, '')}`),
    );
    for (const c of sbom.components) expect(locked.has(c.name), c.name).toBe(true);
  });
});
