// The conversation list's groups by local calendar day, titles from first words told apart, model titles cleaned,
// search over titles and text; unit tests of browser app code (no DOM).
import { describe, expect, it } from 'vitest';
import {
  cleanModelTitle,
  distinctTitle,
  firstWordsTitle,
  groupOf,
  MAX_TITLE,
  matchConversation,
  searchTerms,
} from './groups.js';

const at = (y: number, mo: number, d: number, h = 12, mi = 0) => new Date(y, mo - 1, d, h, mi).getTime();

describe('groupOf', () => {
  const now = at(2026, 3, 10, 9, 30);
  it('groups by local calendar day: Today, Yesterday, Previous 7 days, Older; pinned first', () => {
    expect(groupOf(at(2026, 3, 10, 0, 0), now)).toBe('Today');
    expect(groupOf(at(2026, 3, 9, 23, 59), now)).toBe('Yesterday');
    expect(groupOf(at(2026, 3, 9, 0, 0), now)).toBe('Yesterday');
    expect(groupOf(at(2026, 3, 8, 23, 0), now)).toBe('Previous 7 days');
    expect(groupOf(at(2026, 3, 3, 0, 0), now)).toBe('Previous 7 days');
    expect(groupOf(at(2026, 3, 2, 23, 59), now)).toBe('Older');
    expect(groupOf(at(2020, 1, 1), now)).toBe('Older');
    expect(groupOf(at(2020, 1, 1), now, true)).toBe('Pinned');
  });
});

describe('titles', () => {
  it('takes the first non-empty line, folds spaces and cuts at a word boundary with an ellipsis', () => {
    expect(firstWordsTitle('\n\n  Plan   the trip\nsecond line')).toBe('Plan the trip');
    expect(firstWordsTitle('')).toBe('New conversation');
    const long = firstWordsTitle(`${'word '.repeat(30)}end`);
    expect(long.endsWith('…')).toBe(true);
    expect(long.length).toBeLessThanOrEqual(61);
    expect(long).not.toMatch(/\s…$/);
  });
  it('tells two conversations with the same first words apart', () => {
    expect(distinctTitle('Budget', [])).toBe('Budget');
    expect(distinctTitle('Budget', ['Budget'])).toBe('Budget (2)');
    expect(distinctTitle('Budget', ['Budget', 'Budget (2)'])).toBe('Budget (3)');
  });
  it('cleans a title the model proposed: quotes, "Title:", markdown, controls and bidi characters, length', () => {
    expect(cleanModelTitle('"Tide tables for Brittany"')).toBe('Tide tables for Brittany');
    expect(cleanModelTitle('Title: **Budget review**.')).toBe('Budget review');
    expect(cleanModelTitle('\n  \u202eevil\u200b name\u0007  \nmore')).toBe('evil name');
    expect(cleanModelTitle('x'.repeat(200))).toHaveLength(MAX_TITLE);
    expect(cleanModelTitle('  ""  ')).toBeUndefined();
  });
});

describe('search', () => {
  it('needs every word, in the title or the text, case- and width-insensitive, and shows where it matched', () => {
    const terms = searchTerms('  Walrus   ＣＯＬＯＮＹ ');
    expect(terms).toEqual(['walrus', 'colony']);
    const text = `${'filler '.repeat(10)}we saw the walrus colony at dawn and counted them all ${'tail '.repeat(20)}`;
    const snip = matchConversation('Notes', text, terms);
    expect(snip).toContain('walrus colony');
    expect(snip!.startsWith('…')).toBe(true);
    expect(matchConversation('Walrus research', 'about a colony', terms)).toBe('about a colony');
    expect(matchConversation('Walrus research', 'nothing here', terms)).toBeUndefined();
    expect(matchConversation('Colony of walruses', '', terms)).toBe('');
    expect(matchConversation('anything', 'anything', [])).toBe('');
  });
});
