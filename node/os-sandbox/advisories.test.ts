// Unit tests of the bubblewrap advisory report (advisories.ts); Node host, trusted side.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bwrapAdvisories, isSetuidRoot, parseBwrapVersion } from './advisories.js';

const ids = (text: string | undefined, setuid = false) => bwrapAdvisories(text, { setuid }).advisories.map((a) => a.id);

describe('bwrap advisories', () => {
  it('reads the version of `bwrap --version`', () => {
    expect(parseBwrapVersion('bubblewrap 0.8.0\n')).toEqual([0, 8, 0]);
    expect(parseBwrapVersion('0.12.0-1')).toEqual([0, 12, 0]);
    expect(parseBwrapVersion('bubblewrap 0.11')).toEqual([0, 11, 0]);
    expect(parseBwrapVersion('bubblewrap')).toBeUndefined();
    expect(parseBwrapVersion(undefined)).toBeUndefined();
  });

  it("Debian 12's bubblewrap 0.8.0 has GHSA-pxhw-h44j-8pfx, reported as not exposed through tysandbox", () => {
    const r = bwrapAdvisories('bubblewrap 0.8.0', { setuid: false });
    expect(r.version).toBe('0.8.0');
    expect(r.advisories.map((a) => a.id)).toEqual(['GHSA-pxhw-h44j-8pfx']);
    expect(r.advisories[0]?.aliases).toEqual(['CVE-2026-87766']);
    expect(r.summary).toMatch(
      /^bubblewrap 0\.8\.0: GHSA-pxhw-h44j-8pfx \/ CVE-2026-87766 applies \(fixed in 0\.12\.0\); not exposed through tysandbox: /,
    );
  });

  it('0.12.0 and later: none; setuid-only advisories only for a setuid bwrap in their range', () => {
    expect(ids('bubblewrap 0.12.0')).toEqual([]);
    expect(bwrapAdvisories('bubblewrap 0.12.1', { setuid: false }).summary).toBe(
      'bubblewrap 0.12.1: no known advisory applies',
    );
    expect(ids('bubblewrap 0.11.1')).toEqual(['GHSA-pxhw-h44j-8pfx']);
    expect(ids('bubblewrap 0.11.1', true)).toEqual(['GHSA-pxhw-h44j-8pfx', 'CVE-2026-41163']);
    expect(ids('bubblewrap 0.10.0', true)).toEqual(['GHSA-pxhw-h44j-8pfx']);
    expect(ids('bubblewrap 0.4.0', true)).toEqual(['GHSA-pxhw-h44j-8pfx', 'GHSA-j2qp-rvxj-43vj']);
    expect(ids('bubblewrap 0.3.1')).toEqual(['GHSA-pxhw-h44j-8pfx', 'CVE-2019-12439']);
  });

  it('an unreadable version is never "none apply": every advisory of its mode is listed', () => {
    const r = bwrapAdvisories('bwrap: unknown', { setuid: false });
    expect(r.version).toBeUndefined();
    expect(r.advisories.map((a) => a.id)).toEqual(['GHSA-pxhw-h44j-8pfx', 'CVE-2019-12439']);
    expect(r.summary).toMatch(/^bubblewrap \(version unknown\): /);
  });

  it('tells a setuid-root binary from a plain one', () => {
    expect(isSetuidRoot(process.execPath)).toBe(false);
    expect(isSetuidRoot('/definitely/not/here')).toBe(false);
    const dir = mkdtempSync(join(tmpdir(), 'tysandbox-setuid-'));
    try {
      const f = join(dir, 'bwrap');
      writeFileSync(f, '');
      chmodSync(f, 0o4755);
      // setuid, and owned by root only when this test runs as root
      expect(isSetuidRoot(f)).toBe(process.geteuid?.() === 0);
      chmodSync(f, 0o755);
      expect(isSetuidRoot(f)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
