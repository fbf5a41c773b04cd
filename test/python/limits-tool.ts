// The Python tool the limits tests run on both hosts: an endless loop in main() or at its module's top level, a memory
// bomb, a file system filler; test side.
import type { ToolManifest } from '../../protocol/manifest.js';

/**
 * `main(args)`: `loop` never returns; `bomb` allocates 32 MiB bytearrays until something stops it; `fill` writes 8 MiB
 * files into /tmp until something stops it (`fill: N` writes N of them and returns); `catch` runs the bomb and catches
 * its MemoryError. The module's top level counts its runs in `builtins` (kept by the interpreter across calls) and,
 * once a call passed `arm`, never ends on its next run: a call whose module loops.
 */
export const LIMITS_SOURCE = [
  'import builtins',
  'runs = getattr(builtins, "_limits_runs", 0)',
  'builtins._limits_runs = runs + 1',
  'if getattr(builtins, "_limits_arm", False):',
  '    while True:',
  '        pass',
  '',
  'def bomb():',
  '    held = []',
  '    while True:',
  '        held.append(bytearray(32 << 20))',
  '',
  'def main(args, ctx):',
  '    if args.get("arm"):',
  '        builtins._limits_arm = True',
  '    if args.get("loop"):',
  '        while True:',
  '            pass',
  '    if args.get("bomb"):',
  '        bomb()',
  '    if args.get("catch"):',
  '        try:',
  '            bomb()',
  '        except MemoryError:',
  '            return {"caught": "MemoryError"}',
  '    fill = args.get("fill")',
  '    if fill:',
  '        i = 0',
  '        while fill is True or i < fill:',
  '            with open(f"/tmp/f{i}", "wb") as f:',
  '                f.write(b"x" * (8 << 20))',
  '            i += 1',
  '        return {"files": i}',
  '    return {"runs": runs + 1}',
].join('\n');

/** A manifest of LIMITS_SOURCE: 128 MiB for Pyodide's memory and its in-memory files together. */
export function limitsManifest(name = 'pylimits', engine?: 'node' | 'deno'): ToolManifest {
  return {
    name,
    description: 'Python limits probe',
    parameters: { type: 'object' },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'python',
      source: LIMITS_SOURCE,
      ...(engine ? { engine } : {}),
    },
    limits: { memoryMb: 128 },
  };
}
