// The test embedding page's API on window (driven by test/browser/protocol.test.ts through Playwright); test code.
export {};

declare global {
  interface Window {
    ty: {
      /** Frame `src` (an app origin URL) and wait for its load event. */
      frame(src: string): Promise<void>;
      /** Connect to the framed page at `origin`; the error code when it fails. */
      connect(
        origin: string,
        name?: string,
      ): Promise<{ ok: true; principal: string } | { ok: false; code: string; message: string }>;
      /** One protocol request on the connected client; errors come back as {error}. */
      call(
        method: string,
        params: Record<string, unknown>,
      ): Promise<{ result: unknown } | { error: { code: string; message: string; rpcCode: number } }>;
      /** tool/run with the notifications it got ($/progress, $/log). */
      run(
        ref: string,
        args: unknown,
      ): Promise<{ result?: unknown; error?: { code: string }; progress: unknown[]; logs: unknown[] }>;
      /** Post a raw message to the frame and collect whatever comes back from it for `ms`. */
      raw(message: unknown, origin: string, ms: number): Promise<unknown[]>;
      /** tool/call requests this page answered (name, arguments). */
      calls: { name: string; arguments: unknown }[];
      /** What this page answers to tool/call: a function of the arguments. */
      answer: (args: { x?: number }) => unknown;
    };
  }
}
