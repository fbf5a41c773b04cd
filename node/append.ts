// Appending whole lines to a log file so that a torn tail never merges with the next record; Node host, trusted side.
import { constants as FS } from 'node:fs';
import { open } from 'node:fs/promises';
import { TyError } from '../core/errors.js';

const NL = 0x0a;

/**
 * Append `line` (one record, without its newline) to the file at `path` (created 0600), each record on a line of
 * its own even after a torn write: when the file does not end with a newline (a write cut short by a full disk,
 * a crash mid-write), the record is preceded by one, so the fragment stays a line of its own (readers count it
 * as corrupt) and this record parses. One `write` on an O_APPEND descriptor, then fsync when `sync` (default).
 * Two appenders racing a third one's torn write may both add the newline: an empty line, which readers skip.
 * @throws TyError E_STORE on a short write (the torn tail is repaired by the next append) or any I/O error.
 */
export async function appendLine(path: string, line: string, opts: { sync?: boolean } = {}): Promise<void> {
  const fh = await open(path, FS.O_RDWR | FS.O_APPEND | FS.O_CREAT, 0o600);
  try {
    const { size } = await fh.stat();
    let torn = false;
    if (size > 0) {
      const last = Buffer.alloc(1);
      const { bytesRead } = await fh.read(last, 0, 1, size - 1);
      torn = bytesRead === 1 && last[0] !== NL;
    }
    const bytes = Buffer.from(`${torn ? '\n' : ''}${line}\n`, 'utf8');
    const { bytesWritten } = await fh.write(bytes, 0, bytes.length);
    if (bytesWritten !== bytes.length) throw new TyError('E_STORE', `short write to ${path.split('/').pop() ?? 'log'} (disk full?)`);
    if (opts.sync !== false) await fh.sync();
  } finally {
    await fh.close();
  }
}
