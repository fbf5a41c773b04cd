// Types for text-stats/index.mjs (for the unit tests); sandboxed tool code, untrusted side.
export function words(text: string): string[];
export function sentences(text: string): string[];
export function textStats(args: { text: string; top?: number; wordsPerMinute?: number; skipStopwords?: boolean }): {
  characters: number;
  charactersNoSpaces: number;
  words: number;
  uniqueWords: number;
  sentences: number;
  paragraphs: number;
  lines: number;
  averageWordLength: number;
  averageSentenceWords: number;
  topWords: { word: string; count: number }[];
  readingTime: { seconds: number; text: string };
};
declare const run: (args: unknown) => Promise<unknown>;
export default run;
