// The mounts of a bubblewrap sandbox in a safe order, none beneath a folder the sandbox or another user can write (the
// class of GHSA-pxhw-h44j-8pfx); Node host, trusted side.
import { statSync } from 'node:fs';
import { posix } from 'node:path';
import { TyError } from '../../core/errors.js';

/**
 * One bind mount: `src` (a host path) shown at `dest` inside the sandbox; `writable` for a writable grant. `what` names
 * it in an error (`the runtime file`, `the read-only folder grant`, `the writable folder grant`).
 */
export interface MountEntry {
  dest: string;
  src: string;
  writable: boolean;
  what: string;
}

export interface MountPlanContext {
  /**
   * Folders bound read-only at their own path before every entry (the system library folders of `libraries:
   * 'system'`, e.g. /usr).
   */
  systemFolders: string[];
  /** Symlinks created at the sandbox's root before every entry, link path to target (e.g. /lib -> usr/lib). */
  systemLinks: Map<string, string>;
  /**
   * Whether a user other than root and the one bwrap runs as can change this host path (see othersCanWrite). Injected
   * so the plan is testable without such a user.
   */
  othersCanWrite(path: string): boolean;
}

const beneath = (p: string, root: string): boolean => p !== root && p.startsWith(root === '/' ? '/' : `${root}/`);
const atOrBeneath = (p: string, root: string): boolean => p === root || beneath(p, root);
const depth = (p: string): number => p.split('/').length;

function refuse(message: string): never {
  throw new TyError('E_SANDBOX_FAILED', message);
}

/** `p` with a leading system symlink replaced by its target, the way bwrap resolves it inside the new root. */
function throughLinks(p: string, links: Map<string, string>): string {
  for (const [link, target] of links) {
    if (!beneath(p, link)) continue;
    const t = posix.isAbsolute(target) ? target : posix.join(posix.dirname(link), target);
    return posix.join(t, p.slice(link.length));
  }
  return p;
}

/**
 * Whether a user other than root and `uid` can change `path`: its owner is another user, or it has the group or the
 * other write bit (a group may hold other users). A missing path is not a risk here (bwrap creates it in the new
 * root's own tmpfs). Conservative: a sticky world-writable folder counts as writable.
 */
export function othersCanWrite(path: string, uid: number): boolean {
  try {
    const st = statSync(path);
    return (st.uid !== 0 && st.uid !== uid) || (st.mode & 0o022) !== 0;
  } catch {
    return false;
  }
}

/**
 * The entries to mount, in mount order, such that bwrap never creates a mount point, folder or file beneath a bound
 * host folder a sandbox or another user can write. While bwrap sets up the new root it creates each destination (and
 * its missing parents) by following whatever the path holds; bubblewrap below 0.12.0 (GHSA-pxhw-h44j-8pfx,
 * CVE-2026-87766) then follows a planted parent symlink onto the host and creates the path there, as the user bwrap
 * runs as. Rules, in order:
 * 1. A writable grant inside another writable grant is dropped: the outer one already shows it, writable.
 * 2. Anything inside a writable grant (a runtime file, a read-only grant, a library) is refused: its mount point
 *    would be created in a folder the sandbox writes (a previous run may have planted the symlink).
 * 3. A read-only entry inside a folder bound read-only at its own path (the system folders, a read-only grant) is
 *    dropped: that bind already shows it, read-only, through the same host path.
 * 4. A writable grant inside a read-only bind stays (a writable `out` in a read-only project) only when no folder
 *    from that bind down to the grant's parent can be changed by another user; otherwise it is refused.
 * 5. The rest is mounted outer folders first (a later bind of an ancestor would hide a grant).
 * `links` (a library's name to its real file, created after the binds) follow rules 2 and 3 too.
 * @throws TyError E_SANDBOX_FAILED (rules 2 and 4), saying which path lies beneath which.
 */
export function planMounts(
  entries: MountEntry[],
  ctx: MountPlanContext,
  links: Map<string, string> = new Map(),
): { mounts: MountEntry[]; links: [string, string][] } {
  const writable = entries.filter((e) => e.writable);
  // 1. nested writable grants: the outermost only
  const rwRoots = writable.filter((e) => !writable.some((o) => o !== e && beneath(e.dest, o.dest)));
  const rwUnique = rwRoots.filter((e, i) => rwRoots.findIndex((o) => o.dest === e.dest) === i);
  const identityRo = [
    ...ctx.systemFolders,
    ...entries.filter((e) => !e.writable && e.dest === e.src).map((e) => e.dest),
  ];
  const kept: MountEntry[] = [...rwUnique];
  for (const e of entries) {
    if (e.writable) continue;
    const dest = throughLinks(e.dest, ctx.systemLinks);
    // 2. nothing inside a writable grant
    const w = rwUnique.find((r) => atOrBeneath(dest, r.dest));
    if (w && w.dest === dest && w.src === e.src) continue; // the same folder granted writable: shown by the grant
    if (w)
      refuse(
        `${e.what} ${e.dest} lies inside the writable folder grant ${w.dest}: its mount point would be created in a ` +
          'folder the sandbox can change (GHSA-pxhw-h44j-8pfx); grant a folder that does not contain it',
      );
    // 3. already shown read-only by an outer bind of the same host path
    if (identityRo.some((r) => beneath(dest, r))) continue;
    if (kept.some((k) => !k.writable && k.dest === dest)) continue;
    kept.push(e.dest === dest ? e : { ...e, dest });
  }
  const keptLinks: [string, string][] = [];
  for (const [link, target] of links) {
    const at = throughLinks(link, ctx.systemLinks);
    const w = rwUnique.find((r) => atOrBeneath(at, r.dest));
    if (w)
      refuse(
        `the library link ${link} lies inside the writable folder grant ${w.dest}: it would be created in a folder ` +
          'the sandbox can change (GHSA-pxhw-h44j-8pfx); grant a folder that does not contain it',
      );
    if (identityRo.some((r) => beneath(at, r)) || kept.some((k) => k.dest === at)) continue;
    keptLinks.push([link, target]);
  }
  // 4. every destination inside a kept read-only bind: no folder on the way another user can change
  const roBinds = [
    ...ctx.systemFolders.map((f) => ({ dest: f, src: f })),
    ...kept.filter((k) => !k.writable).map((k) => ({ dest: k.dest, src: k.src })),
  ];
  const created = [...kept, ...keptLinks.map(([dest]) => ({ dest, what: 'the library link' }))];
  for (const e of created) {
    for (const b of roBinds) {
      if (!beneath(e.dest, b.dest)) continue;
      const parts = posix.dirname(e.dest).slice(b.dest.length).split('/').filter(Boolean);
      let p = b.src;
      const walk = [p];
      for (const part of parts) walk.push((p = posix.join(p, part)));
      const open = walk.find((x) => ctx.othersCanWrite(x));
      if (open)
        refuse(
          `${e.what} ${e.dest} lies inside ${b.dest}, and another user can change ${open}: its mount point would be ` +
            'created through a folder someone else controls (GHSA-pxhw-h44j-8pfx); grant folders only you can change',
        );
    }
  }
  // 5. outer folders first; equal depth keeps the given order
  const mounts = kept
    .map((k, i) => ({ k, i }))
    .sort((a, b) => depth(a.k.dest) - depth(b.k.dest) || a.i - b.i)
    .map((x) => x.k);
  return { mounts, links: keptLinks };
}

/**
 * The operands of each bubblewrap option tysandbox passes (bwrap(1), 0.8.0), and which of them create their
 * destination in the new root. An option not listed fails the check (setupPathViolations): a new option must be
 * classified before it is passed.
 */
const BWRAP_ARITY: Readonly<Record<string, number>> = {
  '--unshare-all': 0,
  '--unshare-user': 0,
  '--disable-userns': 0,
  '--die-with-parent': 0,
  '--new-session': 0,
  '--clearenv': 0,
  '--cap-drop': 1,
  '--hostname': 1,
  '--setenv': 2,
  '--size': 1,
  '--remount-ro': 1,
  '--chdir': 1,
  '--tmpfs': 1,
  '--proc': 1,
  '--dev': 1,
  '--dir': 1,
  '--bind': 2,
  '--ro-bind': 2,
  '--symlink': 2,
};
const CREATES: ReadonlySet<string> = new Set([
  '--tmpfs',
  '--proc',
  '--dev',
  '--dir',
  '--bind',
  '--ro-bind',
  '--symlink',
]);

/**
 * Every setup path of a bubblewrap command line (`[setpriv ... --] BWRAP OPTIONS -- command`) that bwrap would create
 * beneath a bound host folder the sandbox can write (`--bind`) or, on the way from a read-only bind's folder down to
 * the path's parent, a user other than root and `uid` can change (othersCanWrite); a destination is first resolved
 * through the command line's own `--symlink`s. Empty when there is none. The final check of bwrapArgv and the
 * `os_setup_paths` diagnostics contract.
 * @returns one line per violation (or for an option it does not know).
 */
export function setupPathViolations(
  argv: string[],
  bwrapPath: string,
  canOthersWrite: (path: string) => boolean,
): string[] {
  const start = argv.indexOf(bwrapPath);
  if (start < 0) return [`no ${bwrapPath} in the command line`];
  const ops: { flag: string; src?: string; dest: string }[] = [];
  let i = start + 1;
  for (; i < argv.length && argv[i] !== '--'; ) {
    const flag = argv[i] as string;
    const n = BWRAP_ARITY[flag];
    if (n === undefined) return [`unclassified bwrap option ${flag}`];
    if (CREATES.has(flag))
      ops.push(
        n === 2
          ? { flag, src: argv[i + 1] as string, dest: argv[i + 2] as string }
          : { flag, dest: argv[i + 1] as string },
      );
    i += 1 + n;
  }
  if (i >= argv.length) return ['no -- before the command'];
  const links = new Map(ops.filter((o) => o.flag === '--symlink').map((o) => [o.dest, o.src as string]));
  const binds = ops.filter((o) => o.flag === '--bind' || o.flag === '--ro-bind');
  const out: string[] = [];
  for (const op of ops) {
    let dest = op.dest;
    for (let k = 0; k < 40; k++) {
      const hit = [...links.keys()].find((l) => beneath(dest, l));
      if (hit === undefined) break;
      dest = throughLinks(dest, new Map([[hit, links.get(hit) as string]]));
    }
    for (const b of binds) {
      if (b === op || !beneath(dest, b.dest)) continue;
      if (b.flag === '--bind') {
        out.push(`${op.flag} ${dest} lies beneath the writable bind ${b.dest}`);
        continue;
      }
      let p = b.src as string;
      const walk = [p];
      for (const part of posix.dirname(dest).slice(b.dest.length).split('/').filter(Boolean))
        walk.push((p = posix.join(p, part)));
      const open = walk.find((x) => canOthersWrite(x));
      if (open) out.push(`${op.flag} ${dest} lies beneath ${b.dest}, through ${open}, which another user can change`);
    }
  }
  return out;
}
