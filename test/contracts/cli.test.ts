// Runs every named security contract (node/diagnostics/contracts.ts) against the command-line host, as `tycli
// diagnostics` does; Node host, trusted side.
import { beforeAll, describe, expect, it } from 'vitest';
import { CliContractHost } from '../../node/diagnostics/cli-host.js';
import { selectContracts, runContracts } from '../../node/diagnostics/contracts.js';

let host: CliContractHost;
beforeAll(async () => {
  host = await CliContractHost.create({ posture: 'required' });
});

describe('security contracts on the cli host', () => {
  it('the host runs all three engines inside bubblewrap', () => {
    expect(host.engines()).toEqual(['node', 'deno', 'quickjs']);
    expect(host.osEnforced()).toBe(true);
  });

  it.each(selectContracts('cli').map((c) => [c.name]))('%s', async (name) => {
    const [r] = await runContracts(
      host,
      selectContracts('cli', name).filter((c) => c.name === name),
    );
    expect(r?.ok, r?.detail).toBe(true);
    // Every check line passed, and both engines were really exercised where the contract runs tools.
    const lines = r!.detail.split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l).toMatch(/^PASS /);
    if (name !== 'sandbox_posture') {
      expect(lines.some((l) => l.includes(' node/'))).toBe(true);
      expect(lines.some((l) => l.includes(' deno/'))).toBe(true);
    }
    // The quickjs engine runs every contract but those of the OS layer alone (no engine checks to switch off) and
    // of Python (a quickjs revision is JavaScript).
    const onQuickJs = !['sandbox_posture', 'os_isolation', 'os_resource_limits', 'python_escapes'].includes(name);
    expect(lines.some((l) => l.includes(' quickjs/'))).toBe(onQuickJs);
  });

  it('the filter is a case-insensitive substring of the names', () => {
    expect(selectContracts('cli', 'OS_').map((c) => c.name)).toEqual(['os_isolation', 'os_resource_limits']);
    expect(selectContracts('cli', 'nothing-matches')).toEqual([]);
  });
});
