// The published security advisories of bubblewrap and which of them affect the installed bwrap, with what each means
// for tysandbox; Node host, trusted side.
import { statSync } from 'node:fs';

/** One published bubblewrap advisory. */
export interface BwrapAdvisory {
  /** The advisory's id: its GHSA id where there is one, else its CVE id. */
  id: string;
  /** Other ids of the same advisory (CVE). */
  aliases: string[];
  /** First fixed bubblewrap version. */
  fixedIn: string;
  /** Affected only when bwrap is installed setuid root. */
  setuidOnly: boolean;
  /** First affected version, when the flaw came with a feature (undefined: every earlier version). */
  since?: string;
  summary: string;
  url: string;
  /**
   * What the flaw means for tysandbox where it applies: `not-exposed` when tysandbox never makes bwrap do what the
   * flaw needs (and `why` names the rule and its test), `exposed` when only an upgrade helps.
   */
  tysandbox: { exposure: 'not-exposed' | 'exposed'; why: string };
}

/** Known bubblewrap advisories (newest first), from the advisories and the bubblewrap NEWS file. */
export const BWRAP_ADVISORIES: readonly BwrapAdvisory[] = Object.freeze([
  {
    id: 'GHSA-pxhw-h44j-8pfx',
    aliases: ['CVE-2026-87766'],
    fixedIn: '0.12.0',
    setuidOnly: false,
    summary:
      'while setting up the new root, bwrap creates files and folders by following a parent symlink, which can lead ' +
      'onto the host (through /oldroot) and create paths there as the user bwrap runs as',
    url: 'https://github.com/containers/bubblewrap/security/advisories/GHSA-pxhw-h44j-8pfx',
    tysandbox: {
      exposure: 'not-exposed',
      why:
        "tysandbox's bwrap command lines create no mount point, folder or symlink beneath a bound folder that a " +
        'sandbox or another user can write (each is checked before it runs; `tycli diagnostics --filter ' +
        'bwrap_setup_paths` checks this machine), so no planted symlink lies on a path bwrap creates; upgrading ' +
        'bubblewrap still closes it for other programs that use bwrap',
    },
  },
  {
    id: 'CVE-2026-41163',
    aliases: [],
    fixedIn: '0.11.2',
    since: '0.11.0',
    setuidOnly: true,
    summary:
      'a setuid-root bwrap can be ptraced during setup and made to create overlay mounts, which setuid mode forbids',
    url: 'https://github.com/containers/bubblewrap/blob/v0.11.2/NEWS.md',
    tysandbox: { exposure: 'exposed', why: 'a setuid-root bwrap is a risk to the whole system: upgrade bubblewrap' },
  },
  {
    id: 'GHSA-j2qp-rvxj-43vj',
    aliases: ['CVE-2020-5291'],
    fixedIn: '0.4.1',
    setuidOnly: true,
    summary:
      'a setuid-root bwrap on a kernel with unprivileged user namespaces lets a local user gain root (--userns2)',
    url: 'https://github.com/containers/bubblewrap/security/advisories/GHSA-j2qp-rvxj-43vj',
    tysandbox: { exposure: 'exposed', why: 'a setuid-root bwrap is a risk to the whole system: upgrade bubblewrap' },
  },
  {
    id: 'CVE-2019-12439',
    aliases: [],
    fixedIn: '0.3.3',
    setuidOnly: false,
    summary:
      'bwrap uses a predictable folder in /tmp as its mount point, which another local user can create first to ' +
      'block or attack it',
    url: 'https://nvd.nist.gov/vuln/detail/CVE-2019-12439',
    tysandbox: { exposure: 'exposed', why: 'tysandbox cannot avoid this folder: upgrade bubblewrap' },
  },
]);

/** `[major, minor, patch]` of `bwrap --version` output (`bubblewrap 0.8.0`, or a bare `0.8.0`); undefined if none. */
export function parseBwrapVersion(text: string | undefined): [number, number, number] | undefined {
  const m = /(?:^|\s)v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?(?![\d.]*\d)/.exec(text ?? '');
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

function below(v: [number, number, number], text: string): boolean {
  const w = parseBwrapVersion(text) as [number, number, number];
  for (let i = 0; i < 3; i++) if (v[i] !== w[i]) return (v[i] as number) < (w[i] as number);
  return false;
}

/** What `tycli sandbox status` and `tycli diagnostics` report about the installed bwrap's advisories. */
export interface BwrapAdvisoryReport {
  /** `0.8.0`; undefined when the version text could not be read. */
  version?: string;
  /** Whether the binary is setuid root. */
  setuid: boolean;
  /** The advisories affecting this version and mode (every one not excluded by mode when the version is unknown). */
  advisories: BwrapAdvisory[];
  /** One line for people: the version and each advisory with its exposure, or that none applies. */
  summary: string;
}

/** Whether `path` is a setuid-root file (mode 04000, owner 0); false when it cannot be read. */
export function isSetuidRoot(path: string | undefined): boolean {
  if (!path) return false;
  try {
    const st = statSync(path);
    return st.uid === 0 && (st.mode & 0o4000) !== 0;
  } catch {
    return false;
  }
}

/**
 * The known advisories that affect a bwrap of this `--version` text and mode. A version that cannot be parsed is
 * reported as unknown, with every advisory of its mode (never as "none apply").
 */
export function bwrapAdvisories(versionText: string | undefined, opts: { setuid: boolean }): BwrapAdvisoryReport {
  const v = parseBwrapVersion(versionText);
  const advisories = BWRAP_ADVISORIES.filter(
    (a) =>
      (!a.setuidOnly || opts.setuid) &&
      (v === undefined || (below(v, a.fixedIn) && (a.since === undefined || !below(v, a.since)))),
  );
  const version = v ? v.join('.') : undefined;
  const head = version ? `bubblewrap ${version}` : 'bubblewrap (version unknown)';
  const summary =
    advisories.length === 0
      ? `${head}: no known advisory applies`
      : `${head}: ${advisories
          .map(
            (a) =>
              `${[a.id, ...a.aliases].join(' / ')} applies (fixed in ${a.fixedIn}); ` +
              (a.tysandbox.exposure === 'not-exposed'
                ? `not exposed through tysandbox: ${a.tysandbox.why}`
                : a.tysandbox.why),
          )
          .join('; ')}`;
  return { ...(version ? { version } : {}), setuid: opts.setuid, advisories, summary };
}
