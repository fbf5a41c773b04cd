// Canonical JSON encoding used for every content address; host-agnostic core, trusted side.
import { TyError } from './errors.js';

/**
 * Encode a plain-data value as canonical JSON: object keys sorted by UTF-16 code units (as
 * RFC 8785 JCS does), no whitespace, `undefined` members omitted, no sparse arrays.
 * Numbers must be finite; non-plain objects (class instances, Map, Date, functions, symbols,
 * bigint) are refused with E_INVALID_MANIFEST-style errors under the given code.
 * Number formatting is ECMAScript's, which RFC 8785 adopts, so equal manifests hash equally on every host.
 * @throws TyError(code) for a value that is not plain data or nests deeper than 256.
 */
export function canonicalJson(value: unknown, code: 'E_INVALID_MANIFEST' | 'E_INVALID_TASK' | 'E_INVALID_ARGS' = 'E_INVALID_MANIFEST'): string {
  const seen = new Set<object>();
  const enc = (v: unknown, depth: number): string => {
    if (depth > 256) throw new TyError(code, 'value nests deeper than 256 levels');
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
        return JSON.stringify(v);
      case 'boolean':
        return v ? 'true' : 'false';
      case 'number':
        if (!Number.isFinite(v)) throw new TyError(code, 'numbers must be finite');
        return JSON.stringify(v);
      case 'object': {
        if (seen.has(v)) throw new TyError(code, 'value contains a cycle');
        seen.add(v);
        try {
          if (Array.isArray(v)) {
            const parts: string[] = [];
            for (let i = 0; i < v.length; i++) {
              if (!(i in v)) throw new TyError(code, 'arrays must not be sparse');
              parts.push(enc(v[i], depth + 1));
            }
            return `[${parts.join(',')}]`;
          }
          const proto = Object.getPrototypeOf(v);
          if (proto !== Object.prototype && proto !== null) throw new TyError(code, 'only plain objects can be encoded');
          const keys = Object.keys(v).sort();
          const parts: string[] = [];
          for (const k of keys) {
            const item = (v as Record<string, unknown>)[k];
            if (item === undefined) continue;
            parts.push(`${JSON.stringify(k)}:${enc(item, depth + 1)}`);
          }
          return `{${parts.join(',')}}`;
        } finally {
          seen.delete(v);
        }
      }
      default:
        throw new TyError(code, `a ${typeof v} cannot be encoded as JSON`);
    }
  };
  return enc(value, 0);
}
