// Install-time checks of a tool's inline JavaScript source: it parses, and it has no static imports; test side.
import { describe, expect, it } from 'vitest';
import { checkToolSource } from './source-check.js';
import { TyError } from '../errors.js';
import type { ToolManifest } from '../../protocol/manifest.js';

const tool = (source: string, runtime: 'javascript' | 'python' = 'javascript'): ToolManifest => ({
  name: 't',
  description: 'd',
  parameters: { type: 'object' },
  execution: { kind: 'sandboxed-code', runtime, source },
});

function refusal(source: string): TyError {
  try {
    checkToolSource(tool(source));
  } catch (e) {
    expect(e).toBeInstanceOf(TyError);
    return e as TyError;
  }
  throw new Error(`accepted: ${source}`);
}

describe('checkToolSource', () => {
  it('refuses a static import or re-export of anything (a Node built-in, a package, a file, a URL), naming it and where', () => {
    for (const [src, spec, line, column] of [
      [
        "import fs from 'node:fs';\nexport default async () => fs.readFileSync('/etc/passwd', 'utf8');",
        'node:fs',
        1,
        16,
      ],
      ["import { spawn } from 'child_process';\nexport default async () => spawn;", 'child_process', 1, 23],
      ["\n\nexport * from './other.mjs';", './other.mjs', 3, 15],
      ["export { x } from 'ipaddr.js';\nexport default async () => 1;", 'ipaddr.js', 1, 19],
      ["import 'https://example.com/x.js';\nexport default async () => 1;", 'https://example.com/x.js', 1, 8],
    ] as const) {
      const e = refusal(src);
      expect(e.code).toBe('E_INVALID_MANIFEST');
      expect(e.data).toEqual({ path: 'execution.source', line, column, import: spec });
      expect(e.message).toContain(`a static import of "${spec}"`);
    }
  });

  it('accepts a source without static imports (dynamic import() is judged at run time), local exports, and any Python', () => {
    for (const src of [
      'export default async (a) => a.x * 2;',
      "export default async () => { const m = await import('node:os'); return typeof m; };",
      'const k = 3;\nexport { k };\nexport default async () => k;',
      'export const helper = () => 1;\nexport default async () => helper();',
    ]) {
      expect(() => checkToolSource(tool(src))).not.toThrow();
    }
    expect(() => checkToolSource(tool('import os\ndef main(args, ctx):\n    return 1\n', 'python'))).not.toThrow();
  });

  it('still names line and column of a syntax error', () => {
    expect(refusal('export default async () => {;').data).toMatchObject({ path: 'execution.source', line: 1 });
  });
});
