// Types for json-reshape/index.mjs (for the unit tests); sandboxed tool code, untrusted side.
export function splitPath(path: string): string[];
export function getPath(value: unknown, path: string): { found: boolean; value?: unknown };
export function flatten(value: unknown, separator?: string): unknown;
export function reshape(args: { json: string; pick?: string[]; rename?: Record<string, string>; flatten?: boolean; separator?: string }): {
  result: unknown;
  records: number;
  missing: Record<string, number>;
};
declare const run: (args: unknown) => Promise<unknown>;
export default run;
