// Crash-consistency invariants of a tycli home, read the way the product reads it (dist/) and checked independently;
// test side.
// checkHome(home, base) returns the list of violations (strings; empty when the store is consistent):
//   - every object in store/objects re-hashes to its name (core/revisions/cid.ts cidOfBytes)
//   - every record in every other namespace is whole JSON, every binding names revisions that exist as objects,
//     every settings record names settings objects that exist
//   - the audit log: the product's reader (Store.readJsonl) counts exactly the lines that are whole records, each one
//     a record the audit schema accepts; a torn line is counted as corrupt, never as a record
//   - nothing that was durable in `base` (the home before the faulted command) is missing: its objects, bindings,
//     secrets and audit records are all still there
//   - the secrets file, when present, is whole JSON of the known format, mode 0600
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const dist = (p) => import(pathToFileURL(join(ROOT, 'dist', p)).href);
const { cidOfBytes } = await dist('core/revisions/cid.js');
const { isAuditRecord } = await dist('core/audit/record.js');
const { FileStoreBackend } = await dist('node/store/file-store.js');
const { Store } = await dist('core/store/contract.js');

const files = (dir) => (existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith('.')) : []);
const json = (p) => {
  try {
    return { ok: true, value: JSON.parse(readFileSync(p, 'utf8')) };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
};

/** The raw audit lines of a home, split as a reader would (a trailing newline ends the last line). */
export function auditLines(home) {
  const p = join(home, 'store', '.logs', 'audit');
  if (!existsSync(p)) return [];
  const lines = readFileSync(p, 'utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** Whole audit records of a home (lines that parse and that the audit schema accepts), in order. */
export function auditRecords(home) {
  const out = [];
  for (const l of auditLines(home)) {
    try {
      const r = JSON.parse(l);
      if (isAuditRecord(r)) out.push(r);
    } catch {
      /* a torn line */
    }
  }
  return out;
}

/** What a home holds that a later state must keep: objects, bindings, secret names and values, audit records. */
export function durableFacts(home) {
  const store = join(home, 'store');
  const bindings = {};
  for (const n of files(join(store, 'bindings'))) {
    const j = json(join(store, 'bindings', n));
    if (j.ok) bindings[n] = j.value;
  }
  const secrets = existsSync(join(home, 'config', 'secrets.json'))
    ? (json(join(home, 'config', 'secrets.json')).value?.secrets ?? {})
    : {};
  return {
    objects: files(join(store, 'objects')),
    bindings,
    secrets,
    audit: auditLines(home).filter((l) => {
      try {
        return isAuditRecord(JSON.parse(l));
      } catch {
        return false;
      }
    }),
  };
}

/**
 * Every invariant of the store under `home`; `base` (durableFacts of the home before the faulted command) adds the
 * "nothing lost" checks. Resolves to a list of violations, empty when consistent.
 */
export async function checkHome(home, base) {
  const v = [];
  const store = join(home, 'store');
  // objects re-hash
  const objects = new Set();
  for (const n of files(join(store, 'objects'))) {
    const bytes = readFileSync(join(store, 'objects', n));
    const cid = await cidOfBytes(new Uint8Array(bytes));
    if (cid !== n)
      v.push(`object ${n.slice(0, 20)}… does not re-hash (${bytes.length} bytes, hashes to ${cid.slice(0, 20)}…)`);
    else objects.add(n);
  }
  // every record whole; bindings and settings point at objects
  for (const ns of files(store)) {
    if (ns === 'objects' || !statSync(join(store, ns)).isDirectory()) continue;
    for (const key of files(join(store, ns))) {
      const j = json(join(store, ns, key));
      if (!j.ok) {
        v.push(`record ${ns}/${key} is not whole JSON (${j.error})`);
        continue;
      }
      if (ns === 'bindings') {
        const b = j.value;
        for (const r of [...(b.revisions ?? []), ...(b.active ? [b.active] : [])])
          if (!objects.has(r)) v.push(`binding ${key} names revision ${r.slice(0, 20)}… that is not a stored object`);
      }
      if (ns === 'tool-settings') {
        const s = j.value;
        for (const r of [s.current, ...(s.history ?? []).map((h) => h.settingsRevision)].filter(Boolean))
          if (!objects.has(r))
            v.push(`settings of ${key.slice(0, 20)}… name ${r.slice(0, 20)}… that is not a stored object`);
      }
    }
  }
  // the audit log as the product reads it, against an independent reading
  const lines = auditLines(home);
  let whole = 0;
  let torn = 0;
  for (const l of lines) {
    if (l === '') continue;
    let r;
    try {
      r = JSON.parse(l);
    } catch {
      torn++;
      continue;
    }
    if (isAuditRecord(r)) whole++;
    else v.push(`audit line is JSON but not a whole record: ${l.slice(0, 80)}`);
  }
  const product = await new Store(new FileStoreBackend(store)).readJsonl('audit');
  if (product.entries.length !== whole)
    v.push(`the audit reader counts ${product.entries.length} records, the log holds ${whole} whole ones`);
  if (product.corrupt !== torn)
    v.push(`the audit reader counts ${product.corrupt} corrupt lines, the log holds ${torn} torn ones`);
  // the secrets file
  const sf = join(home, 'config', 'secrets.json');
  if (existsSync(sf)) {
    const j = json(sf);
    if (!j.ok || j.value?.v !== 1 || typeof j.value.secrets !== 'object') v.push('the secrets file is not whole');
    if ((statSync(sf).mode & 0o077) !== 0) v.push('the secrets file is readable by others');
  }
  // nothing durable before the command is missing
  if (base) {
    const now = durableFacts(home);
    for (const o of base.objects)
      if (!objects.has(o)) v.push(`object ${o.slice(0, 20)}… stored before the command is gone`);
    for (const [name, b] of Object.entries(base.bindings)) {
      const n = now.bindings[name];
      if (!n) v.push(`binding ${name} present before the command is gone`);
      else
        for (const r of b.revisions ?? [])
          if (!(n.revisions ?? []).includes(r)) v.push(`binding ${name} lost revision ${r.slice(0, 20)}…`);
    }
    for (const [k, val] of Object.entries(base.secrets))
      if (now.secrets[k] !== val)
        v.push(`secret ${k} stored before the command is ${k in now.secrets ? 'altered' : 'gone'}`);
    const have = new Set(now.audit);
    const lost = base.audit.filter((l) => !have.has(l)).length;
    if (lost) v.push(`${lost} audit record(s) written before the command are gone`);
  }
  return v;
}
