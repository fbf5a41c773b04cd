// A private Xvfb display and xdotool for dialog tests: finds dialog processes and their windows, answers them; test
// side.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Xvfb {
  /** e.g. `:3`, picked by Xvfb itself (-displayfd), so parallel tests never share one. */
  display: string;
  stop(): Promise<void>;
}

/**
 * An unusual screen size, so a test can tell its own X server from another one answering on the same number.
 * Xvfb runs with -noreset: by default an X server resets when its last client disconnects, and a client
 * connecting during that reset (a dialog starting just after an xdotool call ended) is dropped.
 */
const SCREEN = { width: 1031, height: 773 };

/**
 * Start Xvfb on an unused display number (Xvfb -displayfd picks and locks it) and check that this display
 * really is ours (clients reach a screen of our unusual size: another X server holding the same number, e.g.
 * after its lock file was removed, would answer with another size); retried up to 3 times.
 */
export async function startXvfb(): Promise<Xvfb> {
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const x = await startOneXvfb();
    try {
      const geometry = (await xdotool(x.display, ['getdisplaygeometry'])).trim();
      if (geometry === `${SCREEN.width} ${SCREEN.height}`) return x;
      last = new Error(`display ${x.display} answers with a ${geometry} screen: not ours`);
    } catch (e) {
      last = e;
    }
    await x.stop();
  }
  throw new Error(`cannot start a private Xvfb display: ${String(last)}`);
}

async function startOneXvfb(): Promise<Xvfb> {
  const child: ChildProcess = spawn(
    '/usr/bin/Xvfb',
    ['-displayfd', '1', '-nolisten', 'tcp', '-noreset', '-screen', '0', `${SCREEN.width}x${SCREEN.height}x24`],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const display = await new Promise<string>((resolve, reject) => {
    let got = '';
    const timer = setTimeout(() => reject(new Error('Xvfb did not report a display within 15 s')), 15_000);
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      got += d;
      const m = /^(\d+)\n/.exec(got);
      if (m) {
        clearTimeout(timer);
        resolve(`:${m[1]}`);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Xvfb exited (${code})`));
    });
    child.once('error', reject);
  });
  return {
    display,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      await gone;
    },
  };
}

/** Run xdotool on `display`; resolves with stdout (rejects on a non-zero exit). */
export async function xdotool(display: string, args: string[]): Promise<string> {
  const { stdout } = await run('/usr/bin/xdotool', args, {
    env: { DISPLAY: display, PATH: '/usr/bin:/bin' },
    timeout: 10_000,
  });
  return stdout;
}

/**
 * Window ids whose title matches `name` (a regular expression, as xdotool takes it), mapped or not unless `visible`;
 * none is [].
 */
export async function windowsNamed(display: string, name: string, visible = false): Promise<string[]> {
  try {
    return (await xdotool(display, ['search', ...(visible ? ['--onlyvisible'] : []), '--name', name]))
      .split('\n')
      .filter((l) => l.length > 0);
  } catch {
    return []; // xdotool exits 1 when nothing matches
  }
}

export interface ProcInfo {
  pid: number;
  exe: string;
  argv: string[];
  env: Record<string, string>;
}

/** Processes whose environment has DISPLAY=`display` and whose executable is `exe`. */
export async function processesOn(display: string, exe: string): Promise<ProcInfo[]> {
  const out: ProcInfo[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const path = await readlink(`/proc/${name}/exe`);
      if (path !== exe) continue;
      const env: Record<string, string> = {};
      for (const kv of (await readFile(`/proc/${name}/environ`, 'utf8')).split('\0')) {
        const i = kv.indexOf('=');
        if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
      }
      if (env.DISPLAY !== display) continue;
      const argv = (await readFile(`/proc/${name}/cmdline`, 'utf8')).split('\0');
      if (argv.at(-1) === '') argv.pop();
      out.push({ pid: Number(name), exe: path, argv, env });
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}

/** Poll `fn` until it returns a value that is not undefined, every 100 ms, for at most `ms` (default 20 s). */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** True while a process runs (a zombie, ended but not yet reaped, counts as ended). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return st.slice(st.lastIndexOf(')') + 2, st.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * The dialog's logical lines back from its shown lines: each line starting with `continued` is joined to the one above.
 */
export function joinContinued(lines: string[], continued: string): string[] {
  const out: string[] = [];
  for (const l of lines) {
    if (l.startsWith(continued) && out.length > 0) out[out.length - 1] += l.slice(continued.length);
    else out.push(l);
  }
  return out;
}

/** The longest run without a space in any of the lines, in code points. */
export function longestRun(lines: string[]): number {
  let max = 0;
  for (const l of lines) for (const run of l.split(' ')) max = Math.max(max, Array.from(run).length);
  return max;
}
