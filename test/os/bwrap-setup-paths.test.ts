// GHSA-pxhw-h44j-8pfx class: no bubblewrap argv tysandbox builds makes bwrap create anything beneath a bound host
// folder that a sandbox or another user can write; every kind of sandbox, grants included. Node host, trusted side.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, type SandboxSpec } from '../../core/exec/runtime.js';
import { bwrapArgv, createBwrapWrapper, type BwrapOptions, type SpawnRequest } from '../../node/os-sandbox/bwrap.js';
import { planIsolation } from '../../node/os-sandbox/posture.js';
import { probeUncached, type SandboxProbe } from '../../node/os-sandbox/probe.js';
import { detectPython, PythonTool } from '../../node/python/native-tool.js';
import { NodeSandboxRuntime, packageRoot, resolveDeno } from '../../node/sandbox/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';

/**
 * How many operands each bwrap option this checker knows takes (bwrap(1), 0.8.0). An option missing here fails the
 * test: a new option must be classified (does it create a path?) before tysandbox may pass it.
 */
const ARITY: Record<string, number> = {
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
  '--perms': 1,
  '--remount-ro': 1,
  '--chdir': 1,
  // the options below create their destination (and its missing parents) in the new root
  '--tmpfs': 1,
  '--proc': 1,
  '--dev': 1,
  '--dir': 1,
  '--mqueue': 1,
  '--bind': 2,
  '--ro-bind': 2,
  '--dev-bind': 2,
  '--symlink': 2,
};
const CREATES = new Set(['--tmpfs', '--proc', '--dev', '--dir', '--mqueue', '--bind', '--ro-bind', '--dev-bind']);

interface Op {
  flag: string;
  src?: string;
  dest: string;
}

/** The setup operations of a wrapped command line (`[setpriv ... --] bwrap OPTIONS -- command`), in order. */
function setupOps(argv: string[], bwrapPath: string): Op[] {
  const start = argv.indexOf(bwrapPath);
  expect(start, `bwrap (${bwrapPath}) in ${argv.join(' ')}`).toBeGreaterThanOrEqual(0);
  const ops: Op[] = [];
  for (let i = start + 1; i < argv.length; ) {
    const flag = argv[i] as string;
    if (flag === '--') return ops;
    const n = ARITY[flag];
    if (n === undefined) throw new Error(`unclassified bwrap option ${flag}: say whether it creates a path`);
    const a = argv.slice(i + 1, i + 1 + n);
    if (flag === '--symlink') ops.push({ flag, src: a[0] as string, dest: a[1] as string });
    else if (n === 2 && CREATES.has(flag)) ops.push({ flag, src: a[0] as string, dest: a[1] as string });
    else if (CREATES.has(flag)) ops.push({ flag, dest: a[0] as string });
    i += 1 + n;
  }
  throw new Error('no -- before the command');
}

const beneath = (p: string, root: string) => p !== root && p.startsWith(root === '/' ? '/' : `${root}/`);

/**
 * Whether a user other than root and `me` can change `path` (its owner, or group or other write bits); a missing path
 * counts as not writable (bwrap would create it in the new root's own tmpfs).
 */
function othersCanWrite(path: string, me: number): boolean {
  try {
    const st = statSync(path);
    return (st.uid !== 0 && st.uid !== me) || (st.mode & 0o022) !== 0;
  } catch {
    return false;
  }
}

/**
 * Every violation of the rule: an operation that creates its destination (a mount point, a folder, a symlink) beneath
 * a bind whose host folder the sandbox can write (`--bind`, `--dev-bind`) or, along the path from that folder down to
 * the destination's parent, a user other than root and `me` can change. A destination reached through a `--symlink`
 * is first resolved the way bwrap resolves it inside the new root.
 */
function violations(ops: Op[], me: number): string[] {
  const links = ops.filter((o) => o.flag === '--symlink');
  const resolve = (p: string): string => {
    for (let i = 0; i < 40; i++) {
      const l = links.find((s) => p === s.dest || beneath(p, s.dest));
      if (!l || p === l.dest) return p;
      const target = posix.isAbsolute(l.src as string)
        ? (l.src as string)
        : posix.join(dirname(l.dest), l.src as string);
      p = posix.join(target, p.slice(l.dest.length));
    }
    throw new Error(`symlink loop at ${p}`);
  };
  const binds = ops.filter((o) => o.flag === '--bind' || o.flag === '--ro-bind' || o.flag === '--dev-bind');
  const out: string[] = [];
  for (const op of ops) {
    const dest = resolve(op.dest);
    for (const b of binds) {
      if (b === op || !beneath(dest, b.dest)) continue;
      if (b.flag !== '--ro-bind') {
        out.push(`${op.flag} ${dest} beneath the sandbox-writable ${b.flag} ${b.dest}`);
        continue;
      }
      // the host folders bwrap walks to reach the destination's parent through this bind
      const rel = dirname(dest).slice(b.dest.length);
      const walk = [b.src as string];
      for (const part of rel.split('/').filter(Boolean)) walk.push(posix.join(walk[walk.length - 1] as string, part));
      const open = walk.find((p) => othersCanWrite(p, me));
      if (open) out.push(`${op.flag} ${dest} beneath ${b.dest}, reached through ${open}, which another user can write`);
    }
  }
  return out;
}

let probe: SandboxProbe;
let bwrap: BwrapOptions;
let me: number;
let dir: string;
const deno = resolveDeno();

function jsSpec(folders?: SandboxSpec['folders']): SandboxSpec {
  const manifest: ToolManifest = {
    name: 'probe',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 1' },
  };
  return { revision: 'brev1', manifest, limits: { ...DEFAULT_LIMITS }, ...(folders ? { folders } : {}) };
}
function pySpec(folders?: SandboxSpec['folders']): SandboxSpec {
  const manifest: ToolManifest = {
    name: 'probe',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'python', source: 'def main(args):\n  return 1\n' },
  };
  return { revision: 'brev2', manifest, limits: { ...DEFAULT_LIMITS }, ...(folders ? { folders } : {}) };
}

/** A folder under the fixture, reachable by the sandbox's uid when the CLI runs as root. */
function folder(name: string, mode = 0o755): string {
  const p = join(dir, name);
  mkdirSync(p, { recursive: true });
  chmodSync(p, mode);
  writeFileSync(join(p, 'f.txt'), name);
  return p;
}

/** The wrapped argv of one request, as the host spawns it (createBwrapWrapper: uid lease and all). */
function wrapped(req: SpawnRequest, o: BwrapOptions = bwrap): string[] {
  const w = createBwrapWrapper(o)(req);
  try {
    return [w.command, ...w.args];
  } finally {
    w.release?.();
  }
}

beforeAll(async () => {
  probe = await probeUncached();
  bwrap = { bwrapPath: probe.path ?? '/usr/bin/bwrap' };
  if (probe.prlimit) {
    bwrap.prlimitPath = probe.prlimit;
    bwrap.limits = { nproc: 64, cpuSeconds: 60, dataBytes: 1 << 30, fileBytes: 1 << 26 } as BwrapOptions['limits'];
  }
  if (probe.dropTo) bwrap.dropTo = probe.dropTo;
  me = probe.dropTo ? probe.dropTo.uid : (process.geteuid?.() ?? 0);
  dir = mkdtempSync(join(tmpdir(), 'tysandbox-setup-paths-'));
  chmodSync(dir, 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the checker itself', () => {
  it('finds a mount point beneath a writable bind, one reached through a symlink, and one under a folder others write', () => {
    const open = folder('checker-open', 0o777);
    expect(
      violations(
        [
          { flag: '--bind', src: '/w', dest: '/w' },
          { flag: '--ro-bind', src: '/usr/bin/node', dest: '/w/node' },
          { flag: '--symlink', src: 'w/sub', dest: '/l' },
          { flag: '--dir', dest: '/l/x' },
          { flag: '--ro-bind', src: open, dest: '/o' },
          { flag: '--tmpfs', dest: '/o/t' },
          { flag: '--ro-bind', src: '/usr', dest: '/usr' },
          { flag: '--ro-bind', src: '/usr/bin/node', dest: '/usr/bin/node' },
        ],
        me,
      ),
    ).toEqual([
      '--ro-bind /w/node beneath the sandbox-writable --bind /w',
      '--dir /w/sub/x beneath the sandbox-writable --bind /w',
      `--tmpfs /o/t beneath /o, reached through ${open}, which another user can write`,
    ]);
  });

  it('refuses to read an option it does not know', () => {
    expect(() => setupOps(['/usr/bin/bwrap', '--overlay-src', '/x', '--', 'true'], '/usr/bin/bwrap')).toThrow(
      /unclassified/,
    );
  });
});

describe.skipIf(process.platform !== 'linux')('every sandbox kind: no setup path beneath a writable bind', () => {
  const kinds: [string, () => string[]][] = [];
  const ro = () => folder('ro');
  const rw = () => folder('rw', 0o777);
  for (const engine of ['node', 'deno'] as const) {
    if (engine === 'deno' && !deno) continue;
    const rt = () => new NodeSandboxRuntime({ engine });
    kinds.push([`${engine}: JavaScript, no grant`, () => wrapped(rt().command(jsSpec()))]);
    kinds.push([
      `${engine}: JavaScript, a read-only and a writable folder`,
      () =>
        wrapped(
          rt().command(
            jsSpec([
              { path: ro(), access: 'read' },
              { path: rw(), access: 'write' },
            ]),
          ),
        ),
    ]);
    kinds.push([
      `${engine}: JavaScript, a writable folder inside a read-only one`,
      () => {
        const outer = folder('outer');
        const out = folder('outer/out', 0o777);
        return wrapped(
          rt().command(
            jsSpec([
              { path: outer, access: 'read' },
              { path: out, access: 'write' },
            ]),
          ),
        );
      },
    ]);
    kinds.push([
      `${engine}: JavaScript, a writable folder inside a writable one`,
      () => {
        const outer = folder('both', 0o777);
        const inner = folder('both/inner', 0o777);
        return wrapped(
          rt().command(
            jsSpec([
              { path: outer, access: 'write' },
              { path: inner, access: 'write' },
            ]),
          ),
        );
      },
    ]);
    kinds.push([`${engine}: Python (Pyodide), no grant`, () => wrapped(rt().command(pySpec()))]);
    kinds.push([
      `${engine}: Python (Pyodide), a read-only and a writable folder`,
      () =>
        wrapped(
          rt().command(
            pySpec([
              { path: ro(), access: 'read' },
              { path: rw(), access: 'write' },
            ]),
          ),
        ),
    ]);
    kinds.push([
      `${engine}: JavaScript, a read-only grant of the package that holds the runner`,
      () => wrapped(rt().command(jsSpec([{ path: packageRoot(), access: 'read' }]))),
    ]);
  }
  kinds.push([
    'the availability probe',
    () =>
      bwrapArgv({ command: '/usr/bin/true', args: [], env: {}, readOnlyPaths: [], writablePaths: [] }, {
        ...bwrap,
        ...(probe.dropTo ? { dropTo: { ...probe.dropTo, pool: undefined } } : {}),
      } as BwrapOptions),
  ]);

  it.each(kinds)('%s', (_name, build) => {
    const argv = build();
    const ops = setupOps(argv, bwrap.bwrapPath);
    expect(ops.length).toBeGreaterThan(3);
    expect(violations(ops, me)).toEqual([]);
  });

  it.skipIf(!detectPython({ env: { PATH: '/usr/bin:/bin' } }))(
    'native python (system libraries, a per-run writable work folder)',
    async () => {
      const python = detectPython({ env: { PATH: '/usr/bin:/bin' } });
      const plan = planIsolation('required', probe, { libraries: 'system', runtimes: ['python'] });
      let argv: string[] | undefined;
      const tool = new PythonTool({
        python: python!,
        preapproved: true,
        wrap: (req) => {
          const w = plan.wrap!(req);
          w.release?.();
          argv = [w.command, ...w.args];
          return { command: '/bin/true', args: [], env: {} };
        },
        ...(probe.dropTo ? { sandboxOwner: { uid: probe.dropTo.uid, gid: probe.dropTo.gid } } : {}),
      });
      await tool.run({ code: 'print(1)' });
      const ops = setupOps(argv as string[], bwrap.bwrapPath);
      expect(ops.some((o) => o.flag === '--bind')).toBe(true);
      expect(violations(ops, me)).toEqual([]);
    },
  );
});

describe.skipIf(process.platform !== 'linux')('nested grants in a real sandbox', () => {
  it('a writable folder inside a read-only one is writable, its parent stays read-only', () => {
    const outer = folder('real-outer');
    const out = folder('real-outer/out', 0o777);
    const code =
      `const fs = require('node:fs'); const t = (p) => { try { fs.writeFileSync(p, 'x'); return 'ok'; } ` +
      `catch (e) { return e.code; } }; console.log(JSON.stringify([t(${JSON.stringify(join(out, 'n.txt'))}), ` +
      `t(${JSON.stringify(join(outer, 'n.txt'))})]))`;
    const w = createBwrapWrapper(bwrap)({
      command: process.execPath,
      args: ['-e', code],
      env: {},
      readOnlyPaths: [outer],
      writablePaths: [out],
    });
    const r = spawnSync(w.command, w.args, { env: w.env, encoding: 'utf8', timeout: 30_000 });
    w.release?.();
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(['ok', 'EROFS']);
  });
});

describe.skipIf(process.platform !== 'linux')('grants that would put a setup path beneath a writable folder', () => {
  const refused = (f: () => unknown) =>
    expect(f).toThrow(
      expect.objectContaining({
        code: 'E_SANDBOX_FAILED',
        message: expect.stringMatching(/lies inside .*GHSA-pxhw-h44j-8pfx/),
      }),
    );
  const node = () => new NodeSandboxRuntime({ engine: 'node' });

  it('a read-only folder inside a writable one is refused (its mount point would lie in the writable folder)', () => {
    const outer = folder('rw-outer', 0o777);
    const inner = folder('rw-outer/ro-inner');
    refused(() =>
      wrapped(
        node().command(
          jsSpec([
            { path: outer, access: 'write' },
            { path: inner, access: 'read' },
          ]),
        ),
      ),
    );
  });

  it('a writable folder holding the runtime (runner, engine binary) is refused', () => {
    refused(() => wrapped(node().command(jsSpec([{ path: packageRoot(), access: 'write' }]))));
  });

  it('a runtime reached through a symlink inside a writable folder is refused', () => {
    const w = folder('rw-links', 0o777);
    const link = join(w, 'bin');
    symlinkSync(dirname(process.execPath), link);
    const req: SpawnRequest = {
      command: join(link, 'node'),
      args: ['-e', '0'],
      env: {},
      readOnlyPaths: [],
      writablePaths: [w],
    };
    refused(() => wrapped(req));
  });

  it('a writable folder inside a read-only folder that another user can write is refused', () => {
    const shared = folder('shared-by-others', 0o777);
    const out = folder('shared-by-others/out', 0o777);
    if ((process.geteuid?.() ?? 1) === 0) chownSync(shared, 4242, 4242);
    refused(() =>
      wrapped(
        node().command(
          jsSpec([
            { path: shared, access: 'read' },
            { path: out, access: 'write' },
          ]),
        ),
      ),
    );
  });
});
