// Unit conversion for the example multi-file tool, through the tiny-units package; sandboxed.
import { factor } from 'tiny-units';

export function convert(value, from, to) {
  if (value < 0) {
    throw new RangeError(`a length cannot be negative: ${value}`);
  }
  return (value * factor(from)) / factor(to);
}
