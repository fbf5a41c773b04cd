// json-reshape tool: pick, flatten and rename fields of a JSON document (or of each record of an array); sandboxed tool code, untrusted side.

const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

/** Set a key without ever touching a prototype (a "__proto__" key stays data). */
function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Split a dot path; `a.b.0` addresses obj.a.b[0]. An empty path is refused. */
export function splitPath(path) {
  if (typeof path !== 'string' || path === '' || path.split('.').some((p) => p === '')) throw new Error(`"${String(path).slice(0, 80)}" is not a path; write it like "user.address.city" or "items.0.id"`);
  return path.split('.');
}

/** Read a dot path; `{found:false}` when any step is missing. */
export function getPath(value, path) {
  let cur = value;
  for (const part of splitPath(path)) {
    if (Array.isArray(cur) && /^(0|[1-9]\d*)$/.test(part) && Number(part) < cur.length) cur = cur[Number(part)];
    else if (cur !== null && typeof cur === 'object' && !Array.isArray(cur) && own(cur, part)) cur = cur[part];
    else return { found: false };
  }
  return { found: true, value: cur };
}

/** Flatten nested objects and arrays into one level: keys joined with `separator`; empty objects/arrays stay as values. */
export function flatten(value, separator = '.') {
  const out = {};
  const walk = (v, prefix, depth) => {
    if (depth > 64) throw new Error('the document nests deeper than 64 levels');
    const isObj = v !== null && typeof v === 'object';
    const keys = isObj ? (Array.isArray(v) ? v.map((_, i) => String(i)) : Object.keys(v)) : [];
    if (!isObj || keys.length === 0) {
      put(out, prefix, v);
      return;
    }
    for (const k of keys) walk(Array.isArray(v) ? v[Number(k)] : v[k], prefix === '' ? k : `${prefix}${separator}${k}`, depth + 1);
  };
  if (value === null || typeof value !== 'object') return value;
  walk(value, '', 0);
  return out;
}

/**
 * Reshape one record: `pick` keeps only those paths (output keys are the paths; missing paths are
 * left out and counted), then `flatten` joins nested keys, then `rename` maps output keys.
 */
function reshapeOne(record, { pick, flatten: doFlatten, separator, rename }, stats) {
  let cur = record;
  if (pick) {
    const picked = {};
    for (const p of pick) {
      const r = getPath(record, p);
      if (r.found) put(picked, p, r.value);
      else stats.missing[p] = (stats.missing[p] ?? 0) + 1;
    }
    cur = picked;
  }
  if (doFlatten) cur = flatten(cur, separator);
  if (rename && cur !== null && typeof cur === 'object' && !Array.isArray(cur)) {
    const out = {};
    for (const k of Object.keys(cur)) put(out, own(rename, k) ? rename[k] : k, cur[k]);
    cur = out;
  }
  return cur;
}

/**
 * Reshape a JSON document given as text. An array is treated as a list of records (each reshaped);
 * anything else as one record.
 * @returns {{ result: unknown, records: number, missing: Record<string, number> }}
 */
export function reshape({ json, pick, rename, flatten: doFlatten = false, separator = '.' }) {
  let doc;
  try {
    doc = JSON.parse(json);
  } catch (e) {
    throw new Error(`the json argument is not valid JSON: ${e.message}`);
  }
  if (pick) for (const p of pick) splitPath(p);
  const stats = { missing: {} };
  const opts = { pick, flatten: doFlatten, separator, rename };
  const result = Array.isArray(doc) ? doc.map((r) => reshapeOne(r, opts, stats)) : reshapeOne(doc, opts, stats);
  return { result, records: Array.isArray(doc) ? doc.length : 1, missing: stats.missing };
}

export default async function (args) {
  return reshape(args);
}
