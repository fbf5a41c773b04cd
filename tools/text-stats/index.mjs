// text-stats tool: words, sentences, paragraphs, most frequent words and reading time of a text; sandboxed tool code, untrusted side.

/** Common English function words left out of `topWords` when `skipStopwords` is true. */
const STOPWORDS = new Set(
  ('a an and are as at be but by for from had has have he her his i if in into is it its me my no not of on or our she so ' +
    'than that the their them then there these they this to too us was we were what when which who will with you your').split(' '),
);

const WORD_RE = /[\p{L}\p{N}]+(?:['’\-][\p{L}\p{N}]+)*/gu;

/** Words of a text: Intl.Segmenter word segments that are word-like (UAX #29), else a Unicode letter/number regex. */
export function words(text) {
  if (typeof Intl !== 'undefined' && typeof Intl.Segmenter === 'function') {
    const out = [];
    for (const s of new Intl.Segmenter('en', { granularity: 'word' }).segment(text)) if (s.isWordLike) out.push(s.segment);
    return out;
  }
  return text.match(WORD_RE) ?? [];
}

/** Sentences: Intl.Segmenter sentence segments (UAX #29) that contain at least one word. */
export function sentences(text) {
  if (typeof Intl !== 'undefined' && typeof Intl.Segmenter === 'function') {
    const out = [];
    for (const s of new Intl.Segmenter('en', { granularity: 'sentence' }).segment(text)) if (/[\p{L}\p{N}]/u.test(s.segment)) out.push(s.segment.trim());
    return out;
  }
  return text.split(/(?<=[.!?])\s+/).filter((s) => /[\p{L}\p{N}]/u.test(s)).map((s) => s.trim());
}

const round1 = (x) => Math.round(x * 10) / 10;

/**
 * Statistics of `text`. Reading time assumes `wordsPerMinute` (default 230, a common figure for adult
 * silent reading of English prose), rounded up to whole seconds.
 */
export function textStats({ text, top = 10, wordsPerMinute = 230, skipStopwords = true }) {
  const ws = words(text);
  const ss = sentences(text);
  const paragraphs = text.split(/\n\s*\n/).filter((p) => /[\p{L}\p{N}]/u.test(p)).length;
  const counts = new Map();
  for (const w of ws) {
    const k = w.toLowerCase();
    if (skipStopwords && STOPWORDS.has(k)) continue;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const topWords = [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, top)
    .map(([word, count]) => ({ word, count }));
  const letters = ws.reduce((n, w) => n + [...w].length, 0);
  const seconds = ws.length === 0 ? 0 : Math.ceil((ws.length / wordsPerMinute) * 60);
  return {
    characters: [...text].length,
    charactersNoSpaces: [...text.replace(/\s+/gu, '')].length,
    words: ws.length,
    uniqueWords: new Set(ws.map((w) => w.toLowerCase())).size,
    sentences: ss.length,
    paragraphs,
    lines: text === '' ? 0 : text.replace(/\r?\n$/, '').split(/\r?\n/).length,
    averageWordLength: ws.length ? round1(letters / ws.length) : 0,
    averageSentenceWords: ss.length ? round1(ws.length / ss.length) : 0,
    topWords,
    readingTime: { seconds, text: seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s` },
  };
}

export default async function (args) {
  return textStats(args);
}
