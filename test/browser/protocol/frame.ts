// Test framed page: a browser host serving tysandbox/1 to its parent through browser/registration/window.ts, allowed
// origins from ?allow=; test code, trusted side of the page.
import { createBrowserHost } from '../../../browser/host.js';
import { serveProtocolWindow } from '../../../browser/registration/window.js';

declare global {
  interface Window {
    tyFrameReady?: boolean;
  }
}

const params = new URLSearchParams(location.search);
const allow = params.getAll('allow');
// nobody can answer a question in this page: moving a binding must be refused with E_APPROVAL_REQUIRED
const host = await createBrowserHost({ dbName: `proto-${params.get('db') ?? 'x'}`, askChannels: [] });
const ws = serveProtocolWindow({ host, allowedOrigins: () => allow });
host.setExternal((identity, args, signal) => ws.callParent(identity, args, signal));
window.tyFrameReady = true;
