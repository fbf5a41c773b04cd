// The loopback HTTP transport of the registration protocol: its own bound on sessions answers 429 E_BUSY and counts
// the refusal for the audit under the client's principal; a gateway's place function counts its own; trusted side.
import { afterEach, describe, expect, it } from 'vitest';
import { RegistrationServer } from '../../core/registration/server.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { PermissionGate, StoreDecisions } from '../../core/policy/gate.js';
import { compilePolicy } from '../../core/policy/permissions.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import type { AdmissionRefusal } from '../../core/audit/refusals.js';
import { serveProtocolHttp, type ProtocolHttpHandle } from './http.js';

let h: ProtocolHttpHandle | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function server(refused: AdmissionRefusal[]): RegistrationServer {
  const store = new Store(new MemoryStoreBackend());
  const gate = new PermissionGate({
    config: () => ({ policy: compilePolicy([{ scope: 'flags', allow: ['registry(*)'] }]) }),
    asker: { ask: async () => ({ allow: false, reason: 'no-channel' }) },
    audit: new StoreAuditLog(store),
    pause: new PauseTracker(store, { maxRefusals: 3, windowMs: 60_000 }),
    decisions: new StoreDecisions(store),
  });
  return new RegistrationServer({
    registry: new ToolRegistry(store),
    gate,
    run: async () => ({ ok: false, error: { code: 'E_UNKNOWN_TOOL', message: 'none' } }),
    refusals: { refused: (r) => void refused.push(r) },
  });
}

const initialize = (name: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: 'tysandbox/1', client: { name, version: '1' } },
  });

describe('serveProtocolHttp sessions', () => {
  it('an initialize beyond maxSessions gets 429 E_BUSY with Retry-After and is counted for the audit as its client', async () => {
    const refused: AdmissionRefusal[] = [];
    h = await serveProtocolHttp(server(refused), { port: 0, maxSessions: 1 });
    const post = (body: string) =>
      fetch(h!.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${h!.token}`, 'content-type': 'application/json' },
        body,
      });
    const first = await post(initialize('ide'));
    expect(first.status).toBe(200);
    await first.text();
    const second = await post(initialize('other-ide'));
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('5');
    expect(await second.text()).toContain('E_BUSY');
    expect(refused).toEqual([expect.objectContaining({ principal: 'protocol:other-ide', tool: 'initialize' })]);
  });
});
