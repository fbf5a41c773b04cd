// The controlling terminal (/dev/tty) a question is asked on: open it, and listen on it for one question; Node host,
// trusted side.
import { closeSync, constants as fsc, openSync, writeSync } from 'node:fs';
import { ReadStream } from 'node:tty';

/** An open terminal: where the question is written and the typed answer read. */
export interface TerminalHandle {
  input: NodeJS.ReadableStream;
  write(text: string): void;
  close(): void;
}

/** What one question does with its terminal's input and its withdrawal signal. */
export interface QuestionListeners {
  data(chunk: Buffer | string): void;
  end(): void;
  error(): void;
  abort(): void;
}

/**
 * Attach `on` to `tty`'s input (data, end, error) and to `signal` (abort). The returned `close(note)` detaches
 * them all, writes `note` (a terminal already gone is ignored) and closes the terminal; it does so once and
 * returns false on later calls, so the caller settles its question exactly once.
 */
export function listenOnTerminal(
  tty: TerminalHandle,
  signal: AbortSignal,
  on: QuestionListeners,
): (note: string) => boolean {
  let open = true;
  const onData = (chunk: Buffer | string): void => on.data(chunk);
  const onEnd = (): void => on.end();
  const onError = (): void => on.error();
  const onAbort = (): void => on.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  tty.input.on('data', onData);
  tty.input.on('end', onEnd);
  tty.input.on('error', onError);
  return (note) => {
    if (!open) return false;
    open = false;
    signal.removeEventListener('abort', onAbort);
    tty.input.removeListener('data', onData);
    tty.input.removeListener('end', onEnd);
    tty.input.removeListener('error', onError);
    try {
      tty.write(note);
    } catch {
      /* terminal gone */
    }
    tty.close();
    return true;
  };
}

const TTY_PATH = '/dev/tty';

/** Whether this process has a controlling terminal it can open. */
export function hasControllingTerminal(): boolean {
  try {
    closeSync(openSync(TTY_PATH, fsc.O_RDWR | fsc.O_NOCTTY));
    return true;
  } catch {
    return false;
  }
}

/**
 * Open the controlling terminal, never stdin/stdout: piped input cannot answer and the question is not
 * written into a pipe another program reads. Returns undefined without a controlling terminal (ENXIO).
 */
export function openControllingTerminal(): TerminalHandle | undefined {
  let rfd: number | undefined;
  let wfd: number | undefined;
  try {
    rfd = openSync(TTY_PATH, fsc.O_RDONLY | fsc.O_NOCTTY);
    wfd = openSync(TTY_PATH, fsc.O_WRONLY | fsc.O_NOCTTY);
  } catch {
    if (rfd !== undefined) closeSync(rfd);
    return undefined;
  }
  const input = new ReadStream(rfd);
  const out = wfd;
  let closed = false;
  return {
    input,
    write(text: string) {
      if (!closed) writeSync(out, text);
    },
    close() {
      if (closed) return;
      closed = true;
      input.destroy();
      try {
        closeSync(out);
      } catch {
        /* already closed */
      }
    },
  };
}
