// Benchmark helpers shared by the quickjs benchmark's CLI and Chromium parts: the word-count tool, its text, process
// trees; test side.
import { readFileSync, readdirSync } from 'node:fs';

/** The word-count tool's source (the same on every engine): words, distinct words and the ten most frequent. */
export const WORDCOUNT = `export default async ({ text }) => {
  const counts = new Map();
  let words = 0;
  for (const w of text.toLowerCase().split(/[^a-z']+/)) {
    if (!w) continue;
    words++;
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
  return { words, unique: counts.size, top };
};`;

/** About `bytes` of English-like text: words from a fixed list, drawn by a seeded generator (the same every run). */
export function wordText(bytes) {
  const list = (
    'the of and a to in is you that it he was for on are as with his they at be this have from or one had by word ' +
    'but not what all were we when your can said there use an each which she do how their if will up other about ' +
    'out many then them these so some her would make like him into time has look two more write go see number no ' +
    "way could people my than first water been call who oil its now find long down day did get come made may part don't"
  ).split(' ');
  let seed = 42;
  const next = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed;
  };
  const out = [];
  let n = 0;
  while (n < bytes) {
    // Zipf-like: frequent words more often
    const w = list[Math.floor(list.length * (next() / 2 ** 32) ** 2)];
    const piece = next() % 12 === 0 ? `${w}.\n` : `${w} `;
    out.push(piece);
    n += piece.length;
  }
  return out.join('');
}

/** Pids of every descendant of `root` (from /proc/PID/stat ppid fields). */
export function descendants(root) {
  const parent = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const out = [];
  const want = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, pp] of parent)
      if (want.has(pp) && !want.has(pid)) {
        want.add(pid);
        out.push(pid);
        grew = true;
      }
  }
  return out;
}

/** PSS of every Chromium renderer process, MiB (from /proc: `--type=renderer` in the command line). */
export function rendererPssMb() {
  let kb = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('chromium') || !cmd.includes('--type=renderer')) continue;
      kb += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      /* gone */
    }
  }
  return kb / 1024;
}
