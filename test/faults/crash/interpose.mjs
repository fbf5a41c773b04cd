// Crash-point interposer: preloaded (node --import) into a tycli process under test, it counts the process's writes to
// one home folder and kills the process at the N-th; test side (runs in the host process under test, never in product).
//
// Every mutating file-system operation on a path under TY_FAULT_ROOT (the tycli home; its `run/` scratch folder
// excluded) is a crash point, numbered from 1 in the order the process issues them:
//   open   an open that may create or write (O_CREAT, O_APPEND, O_TRUNC, O_WRONLY, O_RDWR)
//   write  writeSync, write, FileHandle.write/writeFile, writeFile(Sync), appendFile(Sync)
//   fsync  fsync, fdatasync (sync, callback and FileHandle forms)
//   rename, mkdir, unlink (unlink, rm, rmdir), chmod (fchmod, chmod, FileHandle.chmod)
// Operations on a descriptor are attributed by its /proc/self/fd link, so a file renamed or unlinked after it was
// opened still counts. An operation made inside another one (writeFileSync's own openSync) is not counted twice.
//
// Environment (read here only; no product code reads it):
//   TY_FAULT_ROOT   the folder whose operations count (required; nothing is intercepted without it)
//   TY_FAULT_LOG    a file (outside the root) receiving one line per point: `N kind relative/path [bytes]`
//   TY_FAULT_AT     the point to stop at (absent or 0: count only)
//   TY_FAULT_MODE   how to stop at TY_FAULT_AT:
//     kill   SIGKILL before the operation runs (a crashed process: everything it did before is in the page cache)
//     torn   for a write: the first half of its bytes written, then SIGKILL (a write cut short); else as kill
//     power  as kill, and every unsynced change dropped first (a power loss; the model below)
//   TY_FAULT_IMAGE  power mode: the file receiving the durable image (JSON) before the kill; the harness rebuilds the
//                   root from it (test/faults/crash/harness.mjs restoreImage)
//
// The power-loss model is the strict POSIX one (SQLite's crash tests make the same assumptions): a file's bytes are
// durable as of its last fsync/fdatasync (a file never synced is empty), and a directory's entries (creations,
// renames, removals, new folders) as of its last fsync; the root's own entry is durable. Everything present when the
// process started is durable. Inodes are told apart by number and birth time (ext4 reuses numbers).
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join, relative, resolve, sep } from 'node:path';

const ROOT_ENV = process.env.TY_FAULT_ROOT;
if (ROOT_ENV) await install(resolve(ROOT_ENV));

function install(ROOT) {
  const fsp = fs.promises;
  const at = Number(process.env.TY_FAULT_AT ?? 0) || 0;
  const mode = process.env.TY_FAULT_MODE ?? 'kill';
  const logFile = process.env.TY_FAULT_LOG;
  const imageFile = process.env.TY_FAULT_IMAGE;
  const power = mode === 'power' && at > 0;
  // the untouched functions, used by the interposer itself
  const O = {
    appendFileSync: fs.appendFileSync,
    writeFileSync: fs.writeFileSync,
    readFileSync: fs.readFileSync,
    readdirSync: fs.readdirSync,
    readlinkSync: fs.readlinkSync,
    lstatSync: fs.lstatSync,
    fstatSync: fs.fstatSync,
    writeSync: fs.writeSync,
  };
  const SCRATCH = join(ROOT, 'run');
  let count = 0;
  let depth = 0; // > 0 while a counted operation runs synchronously: its inner calls are part of it

  /** The path relative to ROOT when `p` is under it (and not in its scratch folder), else undefined. */
  function inside(p) {
    if (p === undefined || p === null) return undefined;
    let s;
    if (typeof p === 'string') s = p;
    else if (Buffer.isBuffer(p)) s = p.toString('utf8');
    else if (p instanceof URL) s = p.pathname;
    else return undefined;
    s = resolve(s);
    if (s !== ROOT && !s.startsWith(ROOT + sep)) return undefined;
    if (s === SCRATCH || s.startsWith(SCRATCH + sep)) return undefined;
    return relative(ROOT, s) || '.';
  }
  /** What a descriptor names now (its /proc link), relative to ROOT, or undefined. */
  function fdPath(fd) {
    if (typeof fd !== 'number') return undefined;
    try {
      return inside(O.readlinkSync(`/proc/self/fd/${fd}`).replace(/ \(deleted\)$/, ''));
    } catch {
      return undefined;
    }
  }

  // ---- the durable image (power mode only) ----------------------------------------------------------------------
  const durableDirs = new Map(); // inode key -> Map(name -> { key, type, target? })
  const durableFiles = new Map(); // inode key -> Buffer
  const modes = new Map(); // inode key -> mode
  const keyOf = (st) => `${st.ino}:${st.birthtimeNs ?? st.birthtimeMs}`;
  function entriesOf(dirPath) {
    const m = new Map();
    for (const name of O.readdirSync(dirPath)) {
      const p = join(dirPath, name);
      if (p === SCRATCH) continue;
      let st;
      try {
        st = O.lstatSync(p, { bigint: true });
      } catch {
        continue;
      }
      const key = keyOf(st);
      modes.set(key, Number(st.mode & 0o7777n));
      if (st.isDirectory()) m.set(name, { key, type: 'dir' });
      else if (st.isSymbolicLink()) m.set(name, { key, type: 'symlink', target: O.readlinkSync(p) });
      else m.set(name, { key, type: 'file' });
    }
    return m;
  }
  function snapshot(dirPath) {
    const st = O.lstatSync(dirPath, { bigint: true });
    const entries = entriesOf(dirPath);
    durableDirs.set(keyOf(st), entries);
    for (const [name, e] of entries) {
      const p = join(dirPath, name);
      if (e.type === 'dir') snapshot(p);
      else if (e.type === 'file') durableFiles.set(e.key, O.readFileSync(p));
    }
  }
  let rootKey;
  if (power) {
    rootKey = keyOf(O.lstatSync(ROOT, { bigint: true }));
    snapshot(ROOT);
  }
  /** What an fsync of `fd` would make durable, taken when the fsync starts; commit() once it succeeded. */
  function pendingSync(fd) {
    if (!power) return () => {};
    const st = O.fstatSync(fd, { bigint: true });
    const key = keyOf(st);
    const proc = `/proc/self/fd/${fd}`;
    if (st.isDirectory()) {
      const entries = entriesOf(proc);
      return () => durableDirs.set(key, entries);
    }
    const bytes = O.readFileSync(proc);
    return () => durableFiles.set(key, bytes);
  }
  /** The tree a power loss now would leave, as a list the harness rebuilds. */
  function image() {
    const out = [];
    const walk = (key, rel) => {
      for (const [name, e] of durableDirs.get(key) ?? new Map()) {
        const p = rel ? `${rel}/${name}` : name;
        const mode = modes.get(e.key);
        if (e.type === 'dir') {
          out.push({ path: p, type: 'dir', mode });
          walk(e.key, p);
        } else if (e.type === 'symlink') out.push({ path: p, type: 'symlink', target: e.target });
        else
          out.push({
            path: p,
            type: 'file',
            mode,
            data: (durableFiles.get(e.key) ?? Buffer.alloc(0)).toString('base64'),
          });
      }
    };
    walk(rootKey, '');
    return out;
  }

  // a power loss after the command finished (TY_FAULT_AT past its last point): the image as the process exits
  if (power && imageFile)
    process.on('exit', () => {
      if (count < at) O.writeFileSync(imageFile, JSON.stringify(image()));
    });

  // ---- counting and stopping ------------------------------------------------------------------------------------
  function die() {
    process.kill(process.pid, 'SIGKILL');
    // SIGKILL to oneself is delivered before kill(2) returns; never go on in case it is not
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
  }
  /**
   * Count one point; at TY_FAULT_AT stop as the mode says. `torn(half)` performs the first half of a write (torn mode).
   */
  function point(kind, rel, bytes, torn) {
    count++;
    if (logFile) O.appendFileSync(logFile, `${count} ${kind} ${rel}${bytes === undefined ? '' : ` ${bytes}`}\n`);
    if (count !== at) return;
    if (mode === 'torn' && torn && bytes > 1) {
      depth++;
      try {
        torn(Math.floor(bytes / 2));
      } catch {
        /* a failed half-write is a crash all the same */
      }
    }
    if (power && imageFile) O.writeFileSync(imageFile, JSON.stringify(image()));
    die();
  }
  const byteLength = (data, enc) =>
    typeof data === 'string'
      ? Buffer.byteLength(data, typeof enc === 'string' ? enc : 'utf8')
      : (data?.byteLength ?? 0);
  const asBuffer = (data, enc) =>
    typeof data === 'string'
      ? Buffer.from(data, typeof enc === 'string' ? enc : 'utf8')
      : Buffer.from(data.buffer, data.byteOffset, data.byteLength);

  /** Wrap a synchronous function: `classify(args)` returns [kind, rel, bytes?, torn?] for a point, or undefined. */
  function wrapSync(obj, name, classify) {
    const orig = obj[name];
    if (typeof orig !== 'function') return;
    obj[name] = function (...args) {
      if (depth > 0) return Reflect.apply(orig, this, args);
      const c = classify(args);
      if (c === undefined) return Reflect.apply(orig, this, args);
      point(...c);
      const commit = c[0] === 'fsync' ? pendingSync(args[0]) : undefined;
      depth++;
      try {
        const r = Reflect.apply(orig, this, args);
        commit?.();
        return r;
      } finally {
        depth--;
      }
    };
  }
  /** Wrap a callback-style function (callback last). */
  function wrapCb(obj, name, classify) {
    const orig = obj[name];
    if (typeof orig !== 'function') return;
    obj[name] = function (...args) {
      if (depth > 0) return Reflect.apply(orig, this, args);
      const c = classify(args);
      if (c === undefined) return Reflect.apply(orig, this, args);
      point(...c);
      if (c[0] === 'fsync') {
        const commit = pendingSync(args[0]);
        const cb = args[args.length - 1];
        if (typeof cb === 'function')
          args[args.length - 1] = function (err, ...rest) {
            if (!err) commit();
            return Reflect.apply(cb, this, [err, ...rest]);
          };
      }
      depth++;
      try {
        return Reflect.apply(orig, this, args);
      } finally {
        depth--;
      }
    };
  }
  /** Wrap a promise-returning function (fs/promises, FileHandle methods). */
  function wrapAsync(obj, name, classify) {
    const orig = obj[name];
    if (typeof orig !== 'function') return;
    obj[name] = function (...args) {
      if (depth > 0) return Reflect.apply(orig, this, args);
      const c = classify.call(this, args);
      if (c === undefined) return Reflect.apply(orig, this, args);
      point(...c);
      const commit = c[0] === 'fsync' ? pendingSync(this.fd) : undefined;
      depth++;
      let p;
      try {
        p = Reflect.apply(orig, this, args);
      } finally {
        depth--;
      }
      return commit ? p.then((v) => (commit(), v)) : p;
    };
  }

  const WRITE_FLAGS =
    fs.constants.O_CREAT | fs.constants.O_APPEND | fs.constants.O_TRUNC | fs.constants.O_WRONLY | fs.constants.O_RDWR;
  const flagBits = (flags) => {
    if (typeof flags === 'number') return flags;
    if (flags === undefined || flags === null || flags === 'r' || flags === 'rs' || flags === 'sr') return 0;
    return fs.constants.O_WRONLY; // every other string flag writes ('w', 'a', 'r+', 'wx', ...)
  };
  const openClass = ([p, flags]) => {
    const rel = inside(p);
    return rel !== undefined && (flagBits(flags) & WRITE_FLAGS) !== 0 ? ['open', rel] : undefined;
  };
  const pathClass =
    (kind) =>
    ([p]) => {
      const rel = inside(p);
      return rel === undefined ? undefined : [kind, rel];
    };
  const renameClass = ([a, b]) => {
    const ra = inside(a);
    const rb = inside(b);
    return ra === undefined && rb === undefined
      ? undefined
      : ['rename', `${ra ?? '(outside)'} -> ${rb ?? '(outside)'}`];
  };
  const fdClass =
    (kind) =>
    ([fd]) => {
      const rel = fdPath(fd);
      return rel === undefined ? undefined : [kind, rel];
    };
  /** writeSync(fd, buffer, offset?, length?, position?) or writeSync(fd, string, position?, encoding?). */
  const writeFdClass = (args) => {
    const [fd, data] = args;
    const rel = fdPath(fd);
    if (rel === undefined) return undefined;
    let buf;
    if (typeof data === 'string') buf = asBuffer(data, args[3]);
    else {
      const off = typeof args[2] === 'number' ? args[2] : 0;
      const len = typeof args[3] === 'number' ? args[3] : data.byteLength - off;
      buf = asBuffer(data).subarray(off, off + len);
    }
    return ['write', rel, buf.length, (n) => O.writeSync(fd, buf, 0, n)];
  };
  const writeFileClass = ([p, data, opts]) => {
    const rel = typeof p === 'number' ? fdPath(p) : inside(p);
    if (rel === undefined) return undefined;
    const enc = typeof opts === 'string' ? opts : opts?.encoding;
    const buf = typeof data === 'string' || ArrayBuffer.isView(data) ? asBuffer(data, enc) : undefined;
    const torn = buf
      ? (n) => {
          const flag = typeof opts === 'object' && opts?.flag ? opts.flag : 'w';
          O.writeFileSync(p, buf.subarray(0, n), { flag, mode: typeof opts === 'object' ? opts?.mode : undefined });
        }
      : undefined;
    return ['write', rel, buf?.length, torn];
  };

  // synchronous forms
  wrapSync(fs, 'openSync', openClass);
  wrapSync(fs, 'writeSync', writeFdClass);
  wrapSync(fs, 'writeFileSync', writeFileClass);
  wrapSync(fs, 'appendFileSync', (a) =>
    writeFileClass([a[0], a[1], { ...(typeof a[2] === 'object' ? a[2] : {}), flag: 'a' }]),
  );
  wrapSync(fs, 'fsyncSync', fdClass('fsync'));
  wrapSync(fs, 'fdatasyncSync', fdClass('fsync'));
  wrapSync(fs, 'renameSync', renameClass);
  wrapSync(fs, 'mkdirSync', pathClass('mkdir'));
  wrapSync(fs, 'unlinkSync', pathClass('unlink'));
  wrapSync(fs, 'rmSync', pathClass('unlink'));
  wrapSync(fs, 'rmdirSync', pathClass('unlink'));
  wrapSync(fs, 'fchmodSync', fdClass('chmod'));
  wrapSync(fs, 'chmodSync', pathClass('chmod'));
  // callback forms
  wrapCb(fs, 'open', openClass);
  wrapCb(fs, 'write', (a) => {
    const c = writeFdClass(a);
    return c && [c[0], c[1], c[2]];
  });
  wrapCb(fs, 'writeFile', (a) => {
    const c = writeFileClass(a);
    return c && [c[0], c[1], c[2]];
  });
  wrapCb(fs, 'fsync', fdClass('fsync'));
  wrapCb(fs, 'fdatasync', fdClass('fsync'));
  wrapCb(fs, 'rename', renameClass);
  wrapCb(fs, 'mkdir', pathClass('mkdir'));
  wrapCb(fs, 'unlink', pathClass('unlink'));
  wrapCb(fs, 'rm', pathClass('unlink'));
  wrapCb(fs, 'rmdir', pathClass('unlink'));
  wrapCb(fs, 'fchmod', fdClass('chmod'));
  // fs/promises
  wrapAsync(fsp, 'open', openClass);
  wrapAsync(fsp, 'writeFile', (a) => {
    const c = writeFileClass(a);
    return c && [c[0], c[1], c[2], c[3]];
  });
  wrapAsync(fsp, 'appendFile', (a) =>
    writeFileClass([a[0], a[1], { ...(typeof a[2] === 'object' ? a[2] : {}), flag: 'a' }]),
  );
  wrapAsync(fsp, 'rename', renameClass);
  wrapAsync(fsp, 'mkdir', pathClass('mkdir'));
  wrapAsync(fsp, 'unlink', pathClass('unlink'));
  wrapAsync(fsp, 'rm', pathClass('unlink'));
  wrapAsync(fsp, 'rmdir', pathClass('unlink'));
  wrapAsync(fsp, 'chmod', pathClass('chmod'));
  syncBuiltinESMExports();

  // FileHandle methods: the prototype of a handle, reached through one opened on /dev/null
  const probe = fs.openSync('/dev/null', 'r');
  fs.closeSync(probe);
  const ready = fsp.open('/dev/null', 'r').then(async (fh) => {
    const FH = Object.getPrototypeOf(fh);
    await fh.close();
    const fhPath = function () {
      return fdPath(this.fd);
    };
    wrapAsync(FH, 'write', function (a) {
      const rel = fhPath.call(this);
      if (rel === undefined) return undefined;
      const [data] = a;
      let buf;
      if (typeof data === 'string') buf = asBuffer(data, a[2]);
      else {
        const off = typeof a[1] === 'number' ? a[1] : 0;
        const len = typeof a[2] === 'number' ? a[2] : data.byteLength - off;
        buf = asBuffer(data).subarray(off, off + len);
      }
      const fd = this.fd;
      return ['write', rel, buf.length, (n) => O.writeSync(fd, buf, 0, n)];
    });
    wrapAsync(FH, 'writeFile', function (a) {
      const rel = fhPath.call(this);
      if (rel === undefined) return undefined;
      const buf = asBuffer(a[0], typeof a[1] === 'string' ? a[1] : a[1]?.encoding);
      const fd = this.fd;
      return ['write', rel, buf.length, (n) => O.writeSync(fd, buf, 0, n)];
    });
    wrapAsync(FH, 'appendFile', function (a) {
      const rel = fhPath.call(this);
      return rel === undefined ? undefined : ['write', rel, byteLength(a[0], a[1])];
    });
    wrapAsync(FH, 'sync', function () {
      const rel = fhPath.call(this);
      return rel === undefined ? undefined : ['fsync', rel];
    });
    wrapAsync(FH, 'datasync', function () {
      const rel = fhPath.call(this);
      return rel === undefined ? undefined : ['fsync', rel];
    });
    wrapAsync(FH, 'chmod', function () {
      const rel = fhPath.call(this);
      return rel === undefined ? undefined : ['chmod', rel];
    });
  });
  return ready;
}
