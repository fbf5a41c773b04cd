// Debian's haproxy in front of gateway instances on loopback (round robin, health checks on /readyz, sessions kept on
// their instance), started as a child and stopped afterwards; test side.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './postgres.js';

export interface TestHaproxy {
  /** `http://127.0.0.1:PORT` */
  readonly base: string;
  readonly port: number;
  stop(): Promise<void>;
}

export interface HaproxyOptions {
  /** Loopback ports of the instances. */
  backends: number[];
  /** Response headers naming a session (kept on the instance that created it while that instance is up). */
  sessionHeaders?: string[];
  /** Most connections haproxy holds at once (default 9000: haproxy needs two descriptors per connection). */
  maxconn?: number;
}

/**
 * Start haproxy (/usr/sbin/haproxy, foreground, `-db`) on a free loopback port: round robin over `backends`, each
 * checked with `GET /readyz` every 300 ms (down after 2 failures), connection failures retried on another instance
 * (`option redispatch`), requests carrying a session header routed to the instance that issued it. Killed with this
 * process (setpriv --pdeathsig).
 */
export async function startHaproxy(o: HaproxyOptions): Promise<TestHaproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'ty-haproxy-'));
  const port = await freePort();
  const stick = (o.sessionHeaders ?? []).flatMap((h) => [
    `  stick on req.hdr(${h}) table st_${h.replace(/[^a-z]/g, '_')}`,
    `  stick store-response res.hdr(${h}) table st_${h.replace(/[^a-z]/g, '_')}`,
  ]);
  const tables = (o.sessionHeaders ?? []).map(
    (h) => `backend st_${h.replace(/[^a-z]/g, '_')}\n  stick-table type string len 128 size 200k expire 30m\n`,
  );
  const cfg = `global
  maxconn ${o.maxconn ?? 9000}
  log stderr format raw local0 err
defaults
  mode http
  log global
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout queue 60s
  retries 3
  option redispatch
frontend gateway
  bind 127.0.0.1:${port}
  default_backend instances
backend instances
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
${stick.join('\n')}
${o.backends.map((p, i) => `  server i${i} 127.0.0.1:${p} check inter 300ms fall 2 rise 1`).join('\n')}
${tables.join('\n')}`;
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, cfg);
  const child: ChildProcess = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '/usr/sbin/haproxy', '-db', '-f', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (d) => (err += String(d)));
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited: ${err}`);
    if (await listening(port)) break;
    if (Date.now() > deadline) throw new Error(`haproxy did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  let stopped: Promise<void> | undefined;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        const done = () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      });
      return stopped;
    },
  };
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
