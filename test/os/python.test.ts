// The native Python tool under the same OS wrapper (bubblewrap, system libraries): host files, home, network,
// environment and processes out of reach; Node host, trusted side.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectPython, PythonTool } from '../../node/python/native-tool.js';
import { ProbeFixture } from '../../node/diagnostics/contracts.js';
import { waitNoMarker } from '../../node/diagnostics/probes.js';
import { probeSandbox } from '../../node/os-sandbox/probe.js';
import { planIsolation } from '../../node/os-sandbox/posture.js';

// The system interpreter: a pyenv one under /root would be unreachable for the sandbox uid when the CLI runs as root.
const python = detectPython({ env: { PATH: '/usr/bin:/bin' } });

describe.skipIf(!python)('native Python inside bubblewrap', () => {
  let f: ProbeFixture;
  let tool: PythonTool;
  let quick: PythonTool;
  beforeAll(async () => {
    f = await ProbeFixture.create();
    const probe = await probeSandbox();
    const plan = planIsolation('required', probe, { libraries: 'system', runtimes: ['python'] });
    const opts = {
      python: python!,
      preapproved: true,
      wrap: plan.wrap!,
      timeoutMs: 10_000,
      ...(probe.dropTo ? { sandboxOwner: { uid: probe.dropTo.uid, gid: probe.dropTo.gid } } : {}),
    };
    tool = new PythonTool(opts);
    quick = new PythonTool({ ...opts, timeoutMs: 3000 });
    process.env.TYSANDBOX_PY_CANARY = f.canary;
  });
  afterAll(async () => {
    delete process.env.TYSANDBOX_PY_CANARY;
    await f.close();
  });

  it('runs code and writes in its own working folder', async () => {
    const r = await tool.run({
      code: 'import os\nopen("out.txt","w").write("x")\nprint(sorted(os.listdir("/")), os.getcwd() == os.environ["HOME"])',
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).not.toContain("'etc'");
    expect(r.stdout).not.toContain("'home'");
    expect(r.stdout.trim().endsWith('True')).toBe(true);
  });

  it('cannot read the home canary or /etc/shadow, nor see the CLI environment canary anywhere', async () => {
    const code = [
      'import os, json',
      `canary = ${JSON.stringify(f.canary)}`,
      'r = {}',
      `for p in [${JSON.stringify(f.canaryFile)}, "/etc/shadow", "/root/.bash_history"]:`,
      '  try:\n    open(p).read(); r[p] = "read"\n  except OSError as e:\n    r[p] = e.__class__.__name__',
      'seen = [k for k, v in os.environ.items() if canary in v]',
      'for d in os.listdir("/proc"):',
      '  for n in ("environ", "cmdline"):',
      '    try:\n      if canary.encode() in open(f"/proc/{d}/{n}", "rb").read(): seen.append(d + "/" + n)\n    except OSError:\n      pass',
      'r["seen"] = seen',
      'print(json.dumps(r))',
    ].join('\n');
    const r = await tool.run({ code });
    expect(r.exitCode, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(o[f.canaryFile]).toBe('FileNotFoundError');
    expect(o['/etc/shadow']).toBe('FileNotFoundError');
    expect(o['/root/.bash_history']).toBe('FileNotFoundError');
    expect(o.seen).toEqual([]);
  });

  it('cannot write under home or the project folder; nothing appears on the host', async () => {
    const targets = f.writeTargets();
    const code =
      `import json\nr=[]\nfor p in ${JSON.stringify(targets)}:\n  try:\n    open(p,"w").write("x"); ` +
      `r.append("written")\n  except OSError as e:\n    r.append(e.__class__.__name__)\nprint(json.dumps(r))`;
    const r = await tool.run({ code });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(f.writtenOnHost()).toEqual([]);
  });

  it('has no network: TCP to a 127.0.0.1 listener, a Unix socket and DNS fail', async () => {
    const code = [
      'import socket, json',
      'r = {}',
      `try:\n  socket.create_connection(("127.0.0.1", ${f.port}), timeout=3); r["tcp"] = "connected"\nexcept OSError as e:\n  r["tcp"] = e.__class__.__name__`,
      `try:\n  s = socket.socket(socket.AF_UNIX); s.connect(${JSON.stringify(f.unixSocket)}); r["unix"] = "connected"\nexcept OSError as e:\n  r["unix"] = e.__class__.__name__`,
      'try:\n  socket.getaddrinfo("localhost", 80); r["dns"] = "resolved"\nexcept OSError as e:\n  r["dns"] = e.__class__.__name__',
      'print(json.dumps(r))',
    ].join('\n');
    const r = await tool.run({ code });
    expect(r.exitCode, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout) as Record<string, string>;
    expect(o.tcp).toBe('ConnectionRefusedError');
    expect(o.unix).toBe('FileNotFoundError');
    expect(o.dns).toBe('gaierror');
    expect(f.connections).toBe(0);
  });

  it('a background process started by the code does not outlive a timeout', async () => {
    const code = `import subprocess, time\nsubprocess.Popen(["/usr/bin/sleep", "300", ${JSON.stringify(f.marker)}], start_new_session=True)\ntime.sleep(60)`;
    await expect(quick.run({ code })).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    expect(await waitNoMarker(f.marker, 5000)).toEqual([]);
  });

  it('a fork bomb stops at the process limit and the host stays responsive', async () => {
    const code =
      'import os\nn = 0\ntry:\n  while n < 2000:\n    if os.fork() == 0:\n      import time; time.sleep(30); os._exit(0)\n    n += 1\nexcept OSError as e:\n  print(n, e.__class__.__name__)';
    const r = await tool.run({ code });
    expect(r.stdout).toMatch(/^\d+ BlockingIOError/);
    expect(Number(r.stdout.split(' ')[0])).toBeLessThan(128);
    expect(spawnSync(process.execPath, ['-e', 'process.exit(7)'], { env: {}, timeout: 30_000 }).status).toBe(7);
  });
});
