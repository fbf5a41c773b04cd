// Unit tests for the text-stats example tool's logic; test side.
import { describe, expect, it } from 'vitest';
import run, { sentences, textStats, words } from './index.mjs';

describe('text-stats', () => {
  it('splits words across scripts and keeps contractions whole', () => {
    expect(words("Don't panic: naïve café, 42 times — Grüße!")).toEqual(["Don't", 'panic', 'naïve', 'café', '42', 'times', 'Grüße']);
  });
  it('counts sentences that contain words', () => {
    expect(sentences('One. Two? Three!  ... Four')).toEqual(['One.', 'Two?', 'Three!  ...', 'Four']);
  });
  it('computes the statistics', () => {
    const text = 'The cat sat. The cat ran fast!\n\nA dog barked at the cat.';
    const r = textStats({ text, top: 2 });
    expect(r).toMatchObject({ words: 13, sentences: 3, paragraphs: 2, lines: 3, uniqueWords: 9 });
    expect(r.topWords).toEqual([{ word: 'cat', count: 3 }, { word: 'barked', count: 1 }]);
    expect(r.readingTime).toEqual({ seconds: 4, text: '4 s' });
    expect(textStats({ text, top: 2, skipStopwords: false }).topWords).toEqual([{ word: 'cat', count: 3 }, { word: 'the', count: 3 }]);
  });
  it('reading time in minutes and an empty text', async () => {
    const long = 'word '.repeat(460);
    expect(textStats({ text: long, wordsPerMinute: 230 }).readingTime).toEqual({ seconds: 120, text: '2 min 0 s' });
    expect(textStats({ text: 'one\ntwo\n' }).lines).toBe(2);
    expect(await run({ text: '' })).toMatchObject({ words: 0, sentences: 0, lines: 0, averageWordLength: 0, readingTime: { seconds: 0 } });
  });
});
