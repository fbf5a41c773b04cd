// Mounts the registration protocol (browser/registration/window.ts) for pages embedding the app, allowed by the
// "Allowed embedding origins" setting; browser app, trusted side.
import { TyError } from '../../core/errors.js';
import { serveProtocolWindow } from '../registration/window.js';
import { registerEmbeddingServer } from './embed.js';

registerEmbeddingServer((ctx) => {
  const ws = serveProtocolWindow({
    host: ctx.host,
    allowedOrigins: ctx.allowedOrigins,
    ...(ctx.askToAllow ? { askToAllow: ctx.askToAllow } : {}),
  });
  // external-service revisions with transport "parent" run on the embedding page that registered them, after the gate
  ctx.host.setExternal(async (identity, args, signal) => {
    const ex = identity.manifest.execution;
    if (ex.kind === 'external-service' && ex.transport === 'parent') return ws.callParent(identity, args, signal);
    throw new TyError(
      'E_TOOL_FAILED',
      `the web app has no bridge to the external service "${ex.kind === 'external-service' ? ex.serviceId : ''}"`,
    );
  });
  return () => {
    ws.stop();
    ctx.host.setExternal(undefined);
  };
});
