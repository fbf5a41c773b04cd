// Escape-probe tool source (runs INSIDE a sandbox, untrusted side) and the host-side helpers that judge it; Node host,
// trusted side.
import { readdirSync, readFileSync } from 'node:fs';

/** Probe names understood by PROBE_TOOL_SOURCE. */
export const PROBES = [
  'env_canary',
  'read_file',
  'read_shadow',
  'write_files',
  'symlink_etc',
  'proc_root_hostname',
  'tcp_connect',
  'unix_connect',
  'dns_lookup',
  'dev_tty',
  'spawn_background',
  'fork_bomb',
  'huge_allocation',
] as const;
export type ProbeName = (typeof PROBES)[number];

/** Arguments of the probe tool. All paths are host paths chosen by the test or the diagnostics run. */
export interface ProbeArgs {
  probes: ProbeName[];
  /** Value of a canary placed in the CLI's environment and in files; the tool must never see it. */
  canary?: string;
  readPaths?: string[];
  writePaths?: string[];
  port?: number;
  unixSocket?: string;
  /** Unique text put in spawned processes' argv so the host can find orphans. */
  marker?: string;
  /** fork_bomb: stop after this many successful spawns (default 400). */
  forkLimit?: number;
  /** huge_allocation: total MiB to try (default 16384, in 256 MiB steps). */
  allocateMb?: number;
}

/** One observation from inside: `ok` = the operation succeeded; `detail` = error code or what was seen. */
export interface Observation {
  ok: boolean;
  detail: string;
  value?: unknown;
}
export type Observations = Partial<Record<ProbeName, Observation>>;

/**
 * The probe tool (ES module, default export `async (args) => observations`). Runs under Node and Deno
 * (node: built-ins in both). It only reports; the host decides what counts as an escape.
 */
export const PROBE_TOOL_SOURCE = String.raw`
export default async (args) => {
  const out = {};
  const want = new Set(args.probes);
  const fs = await import('node:fs');
  const net = await import('node:net');
  const dns = await import('node:dns');
  const cp = await import('node:child_process');
  const code = (e) => String((e && (e.code || e.name)) || e).slice(0, 80);
  const exe = typeof Deno !== 'undefined' ? Deno.execPath() : process.execPath;
  const idleArgs = (m) => typeof Deno !== 'undefined' ? ['eval', 'setInterval(()=>{},1000)//' + m] : ['-e', 'setInterval(()=>{},1000)//' + m];
  const probe = async (name, fn) => {
    if (!want.has(name)) return;
    try { out[name] = await fn(); } catch (e) { out[name] = { ok: false, detail: code(e) }; }
  };
  const withTimeout = (p, ms) => Promise.race([p, new Promise((r) => setTimeout(() => r({ ok: false, detail: 'timeout' }), ms))]);
  await probe('env_canary', () => {
    const found = [];
    try { const env = (globalThis.process && process.env) || {};
      for (const k of Object.keys(env)) if (String(env[k]).includes(args.canary)) found.push('process.env');
      } catch (e) { found.push('env:' + code(e)); }
    let scanned = 0;
    try {
      for (const d of fs.readdirSync('/proc')) {
        if (!/^(\d+|self)$/.test(d)) continue;
        for (const f of ['environ', 'cmdline']) {
          try { const t = fs.readFileSync('/proc/' + d + '/' + f, 'latin1'); scanned++; if (t.includes(args.canary)) found.push('/proc/' + d + '/' + f); } catch {}
        }
      }
    } catch (e) { found.push('proc:' + code(e)); }
    const hit = found.filter((f) => !f.includes(':'));
    return { ok: hit.length > 0, detail: hit.length ? 'canary seen in ' + hit.join(', ') : 'not seen (' + scanned + ' /proc files read; ' + found.join(' ') + ')' };
  });
  await probe('read_file', () => {
    const seen = [];
    for (const p of args.readPaths || []) { try { const t = fs.readFileSync(p, 'utf8'); seen.push(p + (t.includes(args.canary) ? ' (canary)' : '')); } catch (e) { seen.push(p + ': ' + code(e)); } }
    const hits = seen.filter((s) => !s.includes(': '));
    return { ok: hits.length > 0, detail: seen.join('; '), value: hits };
  });
  await probe('read_shadow', () => { const t = fs.readFileSync('/etc/shadow', 'utf8'); return { ok: true, detail: 'read ' + t.length + ' bytes' }; });
  await probe('write_files', () => {
    const done = [];
    for (const p of args.writePaths || []) { try { fs.writeFileSync(p, 'written by a sandboxed tool ' + args.canary); done.push(p + ': written'); } catch (e) { done.push(p + ': ' + code(e)); } }
    return { ok: done.some((d) => d.endsWith(': written')), detail: done.join('; ') };
  });
  await probe('symlink_etc', () => {
    const link = '/tmp/tysandbox-probe-etc-' + Math.random().toString(36).slice(2);
    fs.symlinkSync('/etc', link);
    const names = fs.readdirSync(link);
    return { ok: names.length > 0, detail: 'listed ' + names.length + ' entries through the link', value: names.slice(0, 50) };
  });
  await probe('proc_root_hostname', () => { const t = fs.readFileSync('/proc/self/root/etc/hostname', 'utf8'); return { ok: true, detail: 'read', value: t.trim().slice(0, 200) }; });
  await probe('tcp_connect', () => withTimeout(new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port: args.port });
    s.once('connect', () => { s.destroy(); resolve({ ok: true, detail: 'connected' }); });
    s.once('error', (e) => resolve({ ok: false, detail: code(e) }));
  }), 5000));
  await probe('unix_connect', () => withTimeout(new Promise((resolve) => {
    const s = net.connect({ path: args.unixSocket });
    s.once('connect', () => { s.destroy(); resolve({ ok: true, detail: 'connected' }); });
    s.once('error', (e) => resolve({ ok: false, detail: code(e) }));
  }), 5000));
  await probe('dns_lookup', async () => {
    const names = ['localhost', 'example.com'];
    const res = [];
    for (const n of names) {
      const r = await withTimeout(dns.promises.lookup(n).then((a) => ({ ok: true, detail: n + ' -> ' + a.address }), (e) => ({ ok: false, detail: n + ': ' + code(e) })), 5000);
      res.push(r);
    }
    return { ok: res.some((r) => r.ok), detail: res.map((r) => r.detail).join('; ') };
  });
  await probe('dev_tty', () => { const fd = fs.openSync('/dev/tty', 'r+'); fs.closeSync(fd); return { ok: true, detail: 'opened /dev/tty' }; });
  await probe('spawn_background', () => {
    const c = cp.spawn(exe, idleArgs(args.marker), { detached: true, stdio: 'ignore' });
    return withTimeout(new Promise((resolve) => {
      c.once('spawn', () => { c.unref(); resolve({ ok: true, detail: 'spawned pid ' + c.pid }); });
      c.once('error', (e) => resolve({ ok: false, detail: code(e) }));
    }), 10000);
  });
  await probe('fork_bomb', async () => {
    const limit = args.forkLimit || 400;
    let n = 0; let err = '';
    for (; n < limit; n++) {
      const r = await new Promise((resolve) => {
        let c;
        try { c = cp.spawn(exe, idleArgs(args.marker), { stdio: 'ignore' }); } catch (e) { resolve(code(e)); return; }
        c.once('spawn', () => resolve(''));
        c.once('error', (e) => resolve(code(e)));
      });
      if (r) { err = r; break; }
    }
    return { ok: n >= limit, detail: n + ' processes started' + (err ? ', then ' + err : ''), value: n };
  });
  await probe('huge_allocation', () => {
    const keep = [];
    const total = args.allocateMb || 16384;
    try { for (let mb = 0; mb < total; mb += 256) keep.push(new Uint8Array(256 * 1024 * 1024).fill(1)); }
    catch (e) { return { ok: false, detail: code(e) + ' after ' + keep.length * 256 + ' MiB: ' + String(e.message).slice(0, 80) }; }
    return { ok: true, detail: 'allocated ' + total + ' MiB' };
  });
  return out;
};
`;

/**
 * The probe tool for the quickjs engine: QuickJS has no Node built-ins, so each probe tries every way a tool inside a
 * QuickJS sandbox could reach the same thing (Node and QuickJS modules through import(), host globals, a second
 * global object through Function, the mediated fetch) and reports what succeeded; every observation should be a
 * refusal. Same names and result shape as PROBE_TOOL_SOURCE, judged the same way.
 */
export const QUICKJS_PROBE_SOURCE = String.raw`
export default async (args) => {
  const out = {};
  const want = new Set(args.probes);
  const code = (e) => String((e && (e.code || e.name)) || e).slice(0, 80);
  const probe = async (name, fn) => {
    if (!want.has(name)) return;
    try { out[name] = await fn(); } catch (e) { out[name] = { ok: false, detail: code(e) }; }
  };
  const tryImport = async (spec) => { try { await import(spec); return { spec, ok: true, detail: spec + ': loaded' }; } catch (e) { return { spec, ok: false, detail: spec + ': ' + code(e) }; } };
  const imports = async (specs) => { const r = []; for (const s of specs) r.push(await tryImport(s)); return { ok: r.some((x) => x.ok), detail: r.map((x) => x.detail).join('; ') }; };
  const HOST_GLOBALS = ['process', 'require', 'module', 'Deno', 'Bun', 'std', 'os', 'WebAssembly', 'scriptArgs', 'print', 'H', 'web'];
  const hostGlobals = () => {
    const g = Function('return this')();
    const found = HOST_GLOBALS.filter((k) => typeof g[k] !== 'undefined');
    if (g !== globalThis) found.push('a second global object');
    return found;
  };
  await probe('env_canary', async () => {
    // The canary is in the CLI's environment: look for it in every string reachable from the global object.
    const seen = [];
    const visited = new Set();
    const walk = (v, path, depth) => {
      if (typeof v === 'string') { if (v.includes(args.canary)) seen.push(path); return; }
      if ((typeof v !== 'object' && typeof v !== 'function') || v === null || visited.has(v) || depth > 6) return;
      visited.add(v);
      for (const k of Reflect.ownKeys(v)) {
        let d;
        try { d = Reflect.getOwnPropertyDescriptor(v, k); } catch { continue; }
        if (d && 'value' in d) walk(d.value, path + '.' + String(k), depth + 1);
      }
    };
    walk(globalThis, 'globalThis', 0);
    const mods = await imports(['node:process', 'process', 'std', 'os']);
    const globals = hostGlobals();
    const hit = [...seen, ...(mods.ok ? [mods.detail] : []), ...globals];
    return { ok: hit.length > 0, detail: hit.length ? 'reachable: ' + hit.join(', ') : 'not seen (' + visited.size + ' objects walked; ' + mods.detail + '; host globals: none)' };
  });
  await probe('read_file', async () => {
    const specs = ['node:fs', 'fs', 'std', 'os'];
    for (const p of args.readPaths || []) specs.push('file://' + p, p);
    return imports(specs);
  });
  await probe('read_shadow', () => imports(['file:///etc/shadow', '/etc/shadow']));
  await probe('write_files', () => imports(['node:fs', 'std', 'os']));
  await probe('symlink_etc', () => imports(['node:fs', 'os']));
  await probe('proc_root_hostname', () => imports(['file:///proc/self/root/etc/hostname', 'os']));
  await probe('tcp_connect', async () => {
    const r = [];
    for (const u of ['http://127.0.0.1:' + args.port + '/', 'https://127.0.0.1:' + args.port + '/']) {
      try { await fetch(u); r.push({ ok: true, detail: u + ': fetched' }); } catch (e) { r.push({ ok: false, detail: u + ': ' + code(e) }); }
    }
    r.push(await tryImport('node:net'));
    return { ok: r.some((x) => x.ok), detail: r.map((x) => x.detail).join('; ') };
  });
  await probe('unix_connect', () => imports(['node:net', 'os']));
  await probe('dns_lookup', () => imports(['node:dns', 'os']));
  await probe('dev_tty', () => imports(['file:///dev/tty', 'os']));
  await probe('spawn_background', async () => {
    const r = await imports(['node:child_process', 'os']);
    const globals = hostGlobals();
    return { ok: r.ok || globals.length > 0, detail: r.detail + (globals.length ? '; host globals: ' + globals.join(', ') : '') };
  });
  await probe('fork_bomb', () => imports(['node:child_process', 'os']));
  await probe('huge_allocation', async () => {
    const chunks = [];
    try { for (let i = 0; i < 64; i++) chunks.push(new Uint8Array(256 * 1024 * 1024)); } catch (e) { return { ok: false, detail: 'failed after ' + chunks.length * 256 + ' MiB: ' + code(e) }; }
    return { ok: true, detail: 'allocated ' + chunks.length * 256 + ' MiB' };
  });
  return out;
};
`;

/** Host pids (Linux /proc scan) whose command line contains `marker`, excluding this process. */
export function processesWithMarker(marker: string): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const d of entries) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'latin1').includes(marker)) out.push(Number(d));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Wait until no host process carries `marker` (polling every 100 ms up to `ms`); returns the survivors. */
export async function waitNoMarker(marker: string, ms = 5000): Promise<number[]> {
  const end = Date.now() + ms;
  for (;;) {
    const left = processesWithMarker(marker);
    if (left.length === 0 || Date.now() > end) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Kill (SIGKILL) every host process carrying `marker`: test and diagnostics cleanup only. */
export function killMarker(marker: string): void {
  for (const pid of processesWithMarker(marker)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}
