// Files handed to tools reaching a tool's argument by reference, and what the model reads instead; unit tests of
// browser app code (no DOM).
import { describe, expect, it } from 'vitest';
import type { Attachment } from '../../../protocol/task.js';
import { attachmentPart, reference, toolFileNote } from './parts.js';
import { putFilesInArgs } from './tool-args.js';

const csv: Attachment = {
  name: 'prices.csv',
  mediaType: 'text/csv',
  bytes: 12,
  sha256: 'a'.repeat(64),
  toTools: true,
};
const png: Attachment = { name: 'dot.png', mediaType: 'image/png', bytes: 3, sha256: 'b'.repeat(64), toTools: true };
const store = new Map<string, Uint8Array>([
  [csv.sha256, new TextEncoder().encode('x,y\n1,2\n')],
  [png.sha256, new Uint8Array([1, 2, 3])],
]);
const load = async (sha: string) => (store.has(sha) ? { bytes: store.get(sha)! } : undefined);
const schema = {
  type: 'object',
  properties: { csv: { type: 'string' }, image: { type: ['string', 'null'] }, count: { type: 'integer' } },
};

describe('putFilesInArgs', () => {
  const files = new Map([
    [reference(csv), csv],
    [reference(png), png],
  ]);
  it('puts a text file in a string argument and an image as a data: URL; other arguments stay', async () => {
    const r = await putFilesInArgs(
      { csv: ` ${reference(csv)} `, image: reference(png), note: reference(csv) },
      schema,
      files,
      load,
    );
    expect(r.args).toEqual({ csv: 'x,y\n1,2\n', image: 'data:image/png;base64,AQID', note: reference(csv) });
    expect(r.used).toEqual(['prices.csv', 'dot.png']);
  });
  it('leaves an argument the schema does not declare a string, and an unknown reference, as they are', async () => {
    const args = { count: reference(csv), csv: 'attachment:000000000000/other.csv' };
    const r = await putFilesInArgs(args, schema, files, load);
    expect(r.args).toEqual(args);
    expect(r.used).toEqual([]);
  });
  it('fails the call when a referenced file is no longer stored', async () => {
    const gone = { ...csv, sha256: 'c'.repeat(64) };
    await expect(
      putFilesInArgs({ csv: reference(gone) }, schema, new Map([[reference(gone), gone]]), load),
    ).rejects.toThrow(/no longer stored/);
  });
});

describe('what the model reads', () => {
  it('a file handed to tools is a note with its reference, never its content', async () => {
    const part = await attachmentPart(csv, load, true);
    expect(part).toEqual({ type: 'text', text: toolFileNote(csv) });
    expect(JSON.stringify(part)).not.toContain('1,2');
    expect(JSON.stringify(part)).toContain(reference(csv));
  });
  it('a text file is its content in a <file> element; an image an image part, or a note when images are off', async () => {
    const text = await attachmentPart({ ...csv, toTools: false }, load, true);
    expect(text).toEqual({ type: 'text', text: '<file name="prices.csv" type="text/csv">\nx,y\n1,2\n\n</file>' });
    expect(await attachmentPart({ ...png, toTools: false }, load, true)).toEqual({
      type: 'image',
      mediaType: 'image/png',
      data: 'AQID',
    });
    const off = await attachmentPart({ ...png, toTools: false }, load, false);
    expect(off.type).toBe('text');
  });
});
