// Preloaded into tycli by the durability-step fault test (NODE_OPTIONS=--import): logs each step of a call's durable
// path as it happens and SIGKILLs the host at the step named by TY_KILL_AT; test side.
// Steps (one line each in TY_STEP_LOG, appended synchronously so a SIGKILL cannot lose it):
//   audit-write:<outcome>  a record was written to the audit log (after the write)
//   sent:call              the call message was written to the sandbox's input (after the write)
//   fsync:begin / :end     an fdatasync of the audit log starts / returned (inline or on the thread pool)
//   received:cap           the sandbox's capability request reached the host (before the host handles it)
//   effect                 the tool's storage write was renamed into place (after the rename)
//   received:result        the sandbox's result reached the host (before the host handles it)
//   answer                 tycli wrote the result to its standard output (after the write)
// TY_KILL_AT=<step> kills this process (SIGKILL, the host only: its sandbox must go by itself) at the first time that
// step happens: before the action for fsync:begin and received:*, after it for the others.
import cp from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';

const log = process.env.TY_STEP_LOG;
const killAt = process.env.TY_KILL_AT;
const origAppend = fs.appendFileSync;
const origReadlink = fs.readlinkSync;
const kill = () => process.kill(process.pid, 'SIGKILL');
function step(name) {
  if (!log) return;
  origAppend(log, `${name} ${process.pid}\n`);
  if (name === killAt) kill();
}
const isAudit = (fd) => {
  try {
    return origReadlink(`/proc/self/fd/${fd}`).endsWith('/store/.logs/audit');
  } catch {
    return false;
  }
};

const writeSync = fs.writeSync;
fs.writeSync = function (fd, buf, ...rest) {
  const n = writeSync.call(this, fd, buf, ...rest);
  if (typeof fd === 'number' && isAudit(fd)) {
    const text = typeof buf === 'string' ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString();
    for (const m of text.matchAll(/"outcome":"([a-z-]+)"/g)) step(`audit-write:${m[1]}`);
  }
  return n;
};
const fdatasyncSync = fs.fdatasyncSync;
fs.fdatasyncSync = function (fd) {
  const audit = isAudit(fd);
  if (audit) step('fsync:begin');
  fdatasyncSync.call(this, fd);
  if (audit) step('fsync:end');
};
const fdatasync = fs.fdatasync;
fs.fdatasync = function (fd, cb) {
  const audit = isAudit(fd);
  if (audit) step('fsync:begin');
  return fdatasync.call(this, fd, (err) => {
    if (audit && !err) step('fsync:end');
    cb(err);
  });
};
const rename = fsp.rename;
fsp.rename = async function (from, to, ...rest) {
  const r = await rename.call(this, from, to, ...rest);
  if (String(to).includes('/tool-storage/')) step('effect');
  return r;
};
const spawn = cp.spawn;
cp.spawn = function (...a) {
  const c = spawn.apply(this, a);
  if (JSON.stringify(a[1] ?? []).includes('sandbox-runner')) {
    if (log) origAppend(log, `spawn ${c.pid}\n`);
    const write = c.stdin.write;
    c.stdin.write = function (chunk, ...r) {
      const ok = write.call(this, chunk, ...r);
      if (String(chunk).includes('"type":"call"')) step('sent:call');
      return ok;
    };
    c.stdout.prependListener('data', (d) => {
      const s = String(d);
      if (s.includes('"type":"cap"')) step('received:cap');
      if (s.includes('"type":"result"')) step('received:result');
    });
  }
  return c;
};
const out = process.stdout.write;
process.stdout.write = function (chunk, ...r) {
  const ok = out.call(this, chunk, ...r);
  if (String(chunk).includes('stored')) step('answer');
  return ok;
};
syncBuiltinESMExports();
