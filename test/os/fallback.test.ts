// The no-backend paths (simulated with the test-only probe override): auto warns once and shows its documented limits,
// required fails closed, off is explicit; Node host, trusted side.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CliContractHost, type RunToolResult } from '../../node/diagnostics/cli-host.js';
import { ProbeFixture } from '../../node/diagnostics/contracts.js';
import { PROBE_TOOL_SOURCE, waitNoMarker, type Observations } from '../../node/diagnostics/probes.js';
import { setProbeOverrideForTests, probeSandbox, type SandboxProbe } from '../../node/os-sandbox/probe.js';
import { planIsolation, warnOnce } from '../../node/os-sandbox/posture.js';

function obsOf(res: RunToolResult): Observations {
  if (!res.ok) throw new Error(`probe tool failed: ${res.code}: ${res.message}`);
  return res.value as Observations;
}

const NONE: SandboxProbe = {
  platform: 'linux',
  backend: 'bwrap',
  available: false,
  reason: 'simulated: bubblewrap (bwrap) is not installed',
};

describe('no OS sandbox backend (simulated)', () => {
  let f: ProbeFixture;
  beforeAll(async () => {
    setProbeOverrideForTests(NONE);
    f = await ProbeFixture.create();
  });
  afterAll(async () => {
    setProbeOverrideForTests(undefined);
    await f.close();
  });
  afterEach(() => {
    f.connections = 0;
  });

  it('the probe reports the simulated absence', async () => {
    expect(await probeSandbox()).toEqual(NONE);
  });

  it('posture required fails closed with E_SANDBOX_UNAVAILABLE before anything is spawned', async () => {
    await expect(CliContractHost.create({ posture: 'required' })).rejects.toMatchObject({
      code: 'E_SANDBOX_UNAVAILABLE',
    });
  });

  it('posture auto warns once, plainly, naming what is not enforced', async () => {
    const host = await CliContractHost.create({ posture: 'auto' });
    expect(host.osEnforced()).toBe(false);
    const text = host.plan.warning ?? '';
    expect(text).toContain('OS sandbox unavailable (simulated: bubblewrap (bwrap) is not installed)');
    expect(text).toMatch(/node: network: Node's permission model does not restrict sockets or DNS/);
    expect(text).toMatch(/environment/);
    const written: string[] = [];
    const stream = { write: (s: string) => written.push(s) };
    warnOnce(stream, text);
    warnOnce(stream, text);
    expect(written).toHaveLength(1);
  });

  it('posture auto, Node: its documented limit is real (the network is reachable) while the engine layer still holds files, env and processes', async () => {
    const host = await CliContractHost.create({ posture: 'auto' });
    const res = await host.runTool({
      engine: 'node',
      source: PROBE_TOOL_SOURCE,
      args: {
        probes: ['tcp_connect', 'read_file', 'env_canary', 'spawn_background'],
        canary: f.canary,
        readPaths: [f.canaryFile],
        port: f.port,
        marker: f.marker,
      },
    });
    expect(res.ok).toBe(true);
    const o = obsOf(res);
    // Not enforced without the OS sandbox, exactly as the warning says:
    expect(o.tcp_connect?.ok).toBe(true);
    expect(f.connections).toBe(1);
    // Still enforced by Node's permission model and the empty environment:
    expect(o.read_file?.ok).toBe(false);
    expect(o.env_canary?.ok).toBe(false);
    expect(o.spawn_background?.ok).toBe(false);
    expect(await waitNoMarker(f.marker, 2000)).toEqual([]);
  });

  it('posture auto, Deno: its own permission checks still refuse the network', async () => {
    const host = await CliContractHost.create({ posture: 'auto' });
    const res = await host.runTool({
      engine: 'deno',
      source: PROBE_TOOL_SOURCE,
      args: { probes: ['tcp_connect'], port: f.port },
    });
    expect(res.ok).toBe(true);
    expect(obsOf(res).tcp_connect?.detail).toBe('NotCapable');
    expect(f.connections).toBe(0);
  });

  it('the OS-only layer is never run without an OS sandbox', async () => {
    const host = await CliContractHost.create({ posture: 'auto' });
    const res = await host.runTool({
      engine: 'node',
      layers: 'os-only',
      source: PROBE_TOOL_SOURCE,
      args: { probes: ['tcp_connect'], port: f.port },
    });
    expect(res).toMatchObject({ ok: false, code: 'E_SANDBOX_UNAVAILABLE' });
    expect(f.connections).toBe(0);
  });

  it('posture off is explicit, even when a backend exists', () => {
    const p = planIsolation('off', { platform: 'linux', backend: 'bwrap', available: true, path: '/usr/bin/bwrap' });
    expect(p.enforced).toBe(false);
    expect(p.warning).toMatch(/switched off/);
  });
});
