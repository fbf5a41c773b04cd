// Line width the formatter cannot enforce: Biome wraps code at 120 columns but neither reflows comments nor splits
// string literals. This check fails on a comment line over 120 columns and on any line over 200 (a string that long is
// split into pieces). Files: the tracked sources Biome formats (tools/ and test/fixtures/ are data, left as they are).
// Usage: node .ci/lint/line-width.mjs [ROOT]   (exit 1 and one line per finding: FILE:LINE: N columns ...)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const COMMENT_MAX = 120;
const LINE_MAX = 200;
const root = process.argv[2] ?? process.cwd();
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter(
    (f) =>
      /\.(ts|mts|mjs|cjs|js)$/.test(f) &&
      !/^(tools|test\/fixtures|test\/conformance)\//.test(f) &&
      !/(^|\/)node_modules\//.test(f),
  );
const found = [];
for (const f of files) {
  let text;
  try {
    text = readFileSync(join(root, f), 'utf8');
  } catch {
    continue; // listed by git but deleted in the work tree
  }
  text.split('\n').forEach((line, i) => {
    const cols = [...line].length;
    const comment = /^\s*(\/\/|\/\*|\*)/.test(line);
    if (comment && cols > COMMENT_MAX)
      found.push(`${f}:${i + 1}: ${cols} columns in a comment (at most ${COMMENT_MAX})`);
    else if (cols > LINE_MAX) found.push(`${f}:${i + 1}: ${cols} columns (at most ${LINE_MAX}; split the string)`);
  });
}
for (const l of found) console.error(l);
if (found.length > 0) {
  console.error(`line width: ${found.length} line(s) too long`);
  process.exit(1);
}
