// Test embedding page: frames the app (or the test frame) and drives tysandbox/1 through `tysandbox/client`
// connectWindow; test code, runs in the page.
import { connectWindow, type ProtocolClient } from '../../../node/client.js';
import type {} from './api.js';

let frame: HTMLIFrameElement | undefined;
let client: ProtocolClient | undefined;

window.ty = {
  calls: [],
  answer: (a) => ({ doubled: (a.x ?? 0) * 2 }),
  frame(src) {
    return new Promise((resolve) => {
      frame?.remove();
      frame = document.createElement('iframe');
      frame.title = 'embedded app';
      frame.style.width = '1100px';
      frame.style.height = '640px';
      frame.addEventListener('load', () => resolve(), { once: true });
      frame.src = src;
      document.body.append(frame);
    });
  },
  async connect(origin, name = 'embedder') {
    try {
      client = await connectWindow(frame!.contentWindow!, origin, {
        name,
        version: '1',
        onToolCall: (c) => {
          window.ty.calls.push({ name: c.name, arguments: c.arguments });
          return window.ty.answer(c.arguments as { x?: number });
        },
      });
      return { ok: true, principal: client.info!.principal };
    } catch (e) {
      const err = e as { code?: string; message?: string };
      return { ok: false, code: String(err.code), message: String(err.message) };
    }
  },
  async call(method, params) {
    try {
      return { result: await client!.request(method, params) };
    } catch (e) {
      const err = e as { code: string; message: string; rpcCode: number };
      return { error: { code: err.code, message: err.message, rpcCode: err.rpcCode } };
    }
  },
  async run(ref, args) {
    const progress: unknown[] = [];
    const logs: unknown[] = [];
    try {
      const r = await client!.tool.run(ref, args, { onProgress: (p) => progress.push(p), onLog: (l) => logs.push(l) });
      return { result: r, progress, logs };
    } catch (e) {
      return { error: { code: String((e as { code?: string }).code) }, progress, logs };
    }
  },
  raw(message, origin, ms) {
    const got: unknown[] = [];
    const target = frame!.contentWindow!;
    const on = (ev: MessageEvent): void => {
      if (ev.source === target) got.push(ev.data);
    };
    window.addEventListener('message', on);
    target.postMessage(message, origin);
    return new Promise((r) => setTimeout(() => (window.removeEventListener('message', on), r(got)), ms));
  },
};
