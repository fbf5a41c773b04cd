// QuickJS sandboxes in the test process itself: the real engine, guest runtime and host channel, without the sandbox
// host process or worker around them (test side; never used by product code, which always isolates them).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { SandboxChannel } from '../../core/exec/channel.js';
import { TyError } from '../../core/errors.js';
import type { CallOptions, SandboxInstance } from '../../core/exec/runtime.js';
import { QUICKJS_GUEST_FILES, guestScript } from '../../core/quickjs/guest-script.js';
import { QuickJsEngine, type QuickJsSandbox, type QuickJsSandboxOptions } from '../../core/quickjs/instance.js';
import { prepareQuickJsWasm } from '../../core/quickjs/wasm.js';

const root = join(import.meta.dirname, '..', '..');
let engine: Promise<QuickJsEngine> | undefined;

/** The guest script from the files in core/guest/. */
export function localGuestScript(): string {
  const texts: Record<string, string> = {};
  for (const f of QUICKJS_GUEST_FILES) texts[f.path] = readFileSync(join(root, 'core', 'guest', f.path), 'utf8');
  return guestScript(texts);
}

/** One engine per test process (the compiled module and the guest script). */
export function localEngine(): Promise<QuickJsEngine> {
  engine ??= (async () => {
    const require = createRequire(import.meta.url);
    const bytes = readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'));
    const info = await prepareQuickJsWasm(new Uint8Array(bytes));
    const module = await WebAssembly.compile(info.bytes as Uint8Array<ArrayBuffer>);
    return new QuickJsEngine({ module, info, guestScript: localGuestScript() });
  })();
  return engine;
}

/** A SandboxInstance over an in-process QuickJS sandbox, loaded with `source`. */
export async function localQuickJs(
  source: string,
  opts: {
    memoryMb?: number;
    stackBytes?: number;
    onLog?: (level: string, text: string) => void;
    loadMs?: number;
    runtime?: 'javascript' | 'python';
  } = {},
): Promise<SandboxInstance & { sandbox: QuickJsSandbox; channel: SandboxChannel }> {
  const eng = await localEngine();
  let sandbox: QuickJsSandbox | undefined;
  let pending: string[] = [];
  const channel: SandboxChannel = new SandboxChannel(
    {
      send: (msg) => deliver(JSON.stringify(msg)),
      sendText: (t) => deliver(t),
      sendParts: (p) => deliver(p.join('')),
      close: () => sandbox?.destroy(),
    },
    opts.onLog ? { onLog: opts.onLog } : {},
  );
  const deliver = (text: string) => {
    // messages go to the sandbox on a later turn, as over a real transport
    queueMicrotask(() => sandbox?.deliver(text));
  };
  const so: QuickJsSandboxOptions = {
    memoryMb: opts.memoryMb ?? 64,
    onMessage: (t) => {
      if (sandbox === undefined) pending.push(t);
      else queueMicrotask(() => channel.receive(t));
    },
    onDeath: (d) =>
      queueMicrotask(() => channel.fail(new TyError(d.code, d.message, d.name ? { name: d.name } : undefined))),
  };
  if (opts.stackBytes !== undefined) so.stackBytes = opts.stackBytes;
  sandbox = await eng.create(so);
  for (const t of pending) channel.receive(t);
  pending = [];
  const sb = sandbox;
  const origDeliver = sb.deliver.bind(sb);
  void origDeliver;
  sb.setDeadline(opts.loadMs ?? 15_000);
  await channel.load(opts.runtime ?? 'javascript', source, opts.loadMs ?? 15_000);
  return {
    revision: 'local',
    sandbox: sb,
    channel,
    get alive() {
      return channel.alive;
    },
    call(args: unknown, o: CallOptions) {
      sb.setDeadline(o.limits.timeoutMs);
      return channel.call(args, o);
    },
    async destroy(reason: string) {
      channel.fail(new TyError('E_SANDBOX_FAILED', `sandbox destroyed: ${reason}`));
    },
  };
}
