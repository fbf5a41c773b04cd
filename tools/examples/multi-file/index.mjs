// Example multi-file tool: converts a length; the sandboxed entry module, bundled at `tycli tool add`.
import { convert } from './lib/convert.mjs';
import { describe } from './lib/words.mjs';

export default async ({ value, from, to }) => {
  const result = convert(value, from, to);
  return { value: result, text: describe(value, from, result, to) };
};
