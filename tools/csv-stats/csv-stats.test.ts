// Unit tests for the csv-stats example tool's logic; test side.
import { describe, expect, it } from 'vitest';
import run, { csvStats, parseCsv } from './index.mjs';

describe('parseCsv', () => {
  it('handles quotes, doubled quotes, delimiters and line breaks inside quotes, CRLF', () => {
    expect(parseCsv('a,b,c\r\n"x, y","say ""hi""","line1\nline2"\r\n1,,3')).toEqual([
      ['a', 'b', 'c'],
      ['x, y', 'say "hi"', 'line1\nline2'],
      ['1', '', '3'],
    ]);
  });
  it('keeps an empty quoted field and a trailing empty field', () => {
    expect(parseCsv('"",a,\n')).toEqual([['', 'a', '']]);
  });
  it('refuses an unterminated quote and text after a closing quote', () => {
    expect(() => parseCsv('a\n"open,1\n2')).toThrow('unterminated quoted field starting on line 2');
    expect(() => parseCsv('"a"b,c')).toThrow('unexpected text after a closing quote');
  });
  it('supports other delimiters', () => {
    expect(parseCsv('a;b\n1;2', ';')).toEqual([['a', 'b'], ['1', '2']]);
  });
});

describe('csvStats', () => {
  const csv = 'city,temp,notes\nOslo,3,"cold, windy"\nRome,18,\nOslo,-2,cold\nLima,19.5,"mild"\n';
  it('computes numeric and text column statistics', () => {
    const r = csvStats({ csv });
    expect(r.rows).toBe(4);
    expect(r.columns[0]).toEqual({ name: 'city', type: 'text', count: 4, missing: 0, distinct: 3, top: [{ value: 'Oslo', count: 2 }, { value: 'Lima', count: 1 }, { value: 'Rome', count: 1 }] });
    expect(r.columns[1]).toMatchObject({ name: 'temp', type: 'numeric', count: 4, missing: 0, min: -2, max: 19.5, median: 10.5, mean: 9.625, sum: 38.5 });
    expect(r.columns[1]!.stddev).toBeCloseTo(9.3098, 3);
    expect(r.columns[2]).toMatchObject({ name: 'notes', type: 'text', count: 3, missing: 1, distinct: 3 });
  });
  it('median of an odd count, headerless input and ragged rows', () => {
    const r = csvStats({ csv: '5\n1\n3,extra', header: false });
    expect(r.columns[0]).toMatchObject({ name: 'column1', median: 3, count: 3 });
    expect(r.columns[1]).toMatchObject({ name: 'column2', type: 'text', count: 1, missing: 2 });
    expect(r.raggedRows).toBe(2);
  });
  it('a column with one non-number is text', () => {
    expect(csvStats({ csv: 'v\n1\n2\nn/a' }).columns[0]!.type).toBe('text');
    expect(csvStats({ csv: 'v\n1e3\n.5\n+2' }).columns[0]).toMatchObject({ type: 'numeric', max: 1000, min: 0.5 });
  });
  it('empty input and bad delimiters', async () => {
    expect(csvStats({ csv: '' })).toEqual({ rows: 0, columns: [] });
    expect(() => csvStats({ csv: 'a', delimiter: '"' })).toThrow('delimiter');
    expect(() => csvStats({ csv: 'a', delimiter: ';;' })).toThrow('delimiter');
    expect(await run({ csv: 'a\n1' })).toMatchObject({ rows: 1 });
  });
});
