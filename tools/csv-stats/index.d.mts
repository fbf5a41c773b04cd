// Types for csv-stats/index.mjs (for the unit tests); sandboxed tool code, untrusted side.
export function parseCsv(text: string, delimiter?: string): string[][];
export function csvStats(args: { csv: string; delimiter?: string; header?: boolean; top?: number }): {
  rows: number;
  raggedRows?: number;
  columns: Array<Record<string, unknown> & { name: string; type: 'numeric' | 'text' }>;
};
declare const run: (args: unknown) => Promise<unknown>;
export default run;
