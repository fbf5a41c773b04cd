// Helper run under a pseudo-terminal by test/os/pty.test.ts: the "CLI" side holding a controlling tty, probing /dev/tty
// and TIOCSTI from inside the sandbox; Node host, trusted side.
import { spawnSync } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { CliContractHost } from '../../node/diagnostics/cli-host.js';
import { PROBE_TOOL_SOURCE, type Observations } from '../../node/diagnostics/probes.js';
import { createBwrapWrapper } from '../../node/os-sandbox/bwrap.js';
import { probeSandbox } from '../../node/os-sandbox/probe.js';

const out: Record<string, unknown> = {};
try {
  closeSync(openSync('/dev/tty', 'r+'));
  out.hostTty = 'opened';
} catch (e) {
  out.hostTty = (e as NodeJS.ErrnoException).code;
}
const host = await CliContractHost.create({ posture: 'required' });
for (const engine of ['node', 'deno'] as const) {
  for (const layers of ['full', 'os-only'] as const) {
    const r = await host.runTool({ engine, layers, source: PROBE_TOOL_SOURCE, args: { probes: ['dev_tty'] } });
    out[`${engine}/${layers}`] = r.ok ? (r.value as Observations).dev_tty?.detail : `${r.code}`;
  }
}
// TIOCSTI (0x5412) on fd 0 (the pty, inherited) and on /dev/tty, from Python with and without the wrapper.
const py = '/usr/bin/python3';
const code = [
  'import fcntl, termios, os, json',
  'r = {}',
  'try:\n  fcntl.ioctl(0, termios.TIOCSTI, b"#"); r["fd0"] = "injected"\nexcept OSError as e:\n  r["fd0"] = os.strerror(e.errno)',
  'try:\n  fd = os.open("/dev/tty", os.O_RDWR); r["devtty"] = "opened"\nexcept OSError as e:\n  r["devtty"] = os.strerror(e.errno)',
  'print(json.dumps(r))',
].join('\n');
const p = await probeSandbox();
const wrap = createBwrapWrapper({
  bwrapPath: p.path as string,
  libraries: 'system',
  ...(p.dropTo ? { dropTo: p.dropTo } : {}),
});
const w = wrap({
  command: py,
  args: ['-I', '-c', code],
  env: { LANG: 'C.UTF-8' },
  readOnlyPaths: [],
  writablePaths: [],
});
const inSandbox = spawnSync(w.command, w.args, {
  env: w.env,
  stdio: ['inherit', 'pipe', 'pipe'],
  encoding: 'utf8',
  timeout: 30_000,
});
out.pythonSandboxed = inSandbox.stdout.trim() || inSandbox.stderr.trim();
const bare = spawnSync(py, ['-I', '-c', code], {
  env: { LANG: 'C.UTF-8' },
  stdio: ['inherit', 'pipe', 'pipe'],
  encoding: 'utf8',
  timeout: 30_000,
});
out.pythonUnsandboxed = bare.stdout.trim() || bare.stderr.trim();
process.stdout.write(`RESULT ${JSON.stringify(out)}\n`);
