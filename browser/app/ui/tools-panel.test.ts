// The Tools panel's fetch warnings use the mediated fetch's own rule: every refused target of the vendored cases warns,
// and the warning's verdict is the fetch's refusal; test code.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { judgeFetchUrl, preflight } from '../../../core/capabilities/fetch/mediated.js';
import type { ToolManifest } from '../../../protocol/manifest.js';
import { fetchWarnings } from './tools-panel.js';

const cases = JSON.parse(
  readFileSync(new URL('../../../test/fixtures/cases/fetch-targets.json', import.meta.url), 'utf8'),
) as { refused: { url: string; kind: string }[]; allowed_when_rules_allow: { url: string; kind: string }[] };

const manifest = (origin: string) =>
  ({
    name: 'f',
    description: 'd',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default () => 1' },
    capabilities: { fetch: [{ origin, access: 'read' }] },
  }) as unknown as ToolManifest;

async function refusal(url: string): Promise<string | undefined> {
  try {
    await preflight({ url });
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code;
  }
}

describe('Tools panel fetch warnings', () => {
  it.each(cases.refused)(
    'warns for $url ($kind), with the code the mediated fetch refuses it with',
    async ({ url }) => {
      const origin = /^https?:\/\//.test(url) ? url.replace(/^(https?:\/\/[^/]*).*$/, '$1') : url;
      const warn = fetchWarnings(manifest(origin));
      expect(warn).toHaveLength(1);
      expect(warn[0]).toMatch(/^tools cannot reach .+: a request there is always refused \(.+\)$/);
      const code = await refusal(url);
      expect(code).toMatch(/^E_FETCH_/);
      let parsed: URL | undefined;
      try {
        parsed = new URL(url);
      } catch {
        /* not a URL: refused as E_FETCH_TARGET by both */
      }
      if (parsed) expect(judgeFetchUrl(parsed)).toMatchObject({ ok: false, code });
    },
  );

  it.each(cases.allowed_when_rules_allow)('does not warn for $url ($kind)', async ({ url }) => {
    expect(fetchWarnings(manifest(new URL(url).origin))).toEqual([]);
    await expect(refusal(url)).resolves.toBeUndefined();
  });

  it('names the loopback host of the report and judges a wildcard by its domain', () => {
    expect(fetchWarnings(manifest('https://127.0.0.1:8443'))).toEqual([
      'tools cannot reach 127.0.0.1: a request there is always refused (127.0.0.1 is a loopback address)',
    ]);
    expect(fetchWarnings(manifest('https://*.internal'))[0]).toMatch(/^tools cannot reach internal:/);
    expect(fetchWarnings(manifest('https://*.example.org'))).toEqual([]);
  });
});
