// Diagnostics page script: exposes runBrowserContracts to the driver and renders results as a table; test page, trusted
// host side.
import { runBrowserContracts, contractNames, type ContractRow } from './contracts.js';
import { runBrowserBench } from './bench.js';
import { invokeManifest } from './cross-host.js';
import { runMcpBench } from './bench-mcp.js';
import { BrowserQuickJsRuntime } from '../quickjs/runtime.js';

declare global {
  interface Window {
    tyRunContracts: typeof runBrowserContracts;
    tyContractNames: typeof contractNames;
    tyHarnessReady: boolean;
    tyBench: typeof runBrowserBench;
    tyInvokeManifest: typeof invokeManifest;
    tyBenchMcp: typeof runMcpBench;
    /** The quickjs engine's runtime, for the browser tests and benchmarks that drive it directly. */
    tyQuickJsRuntime: typeof BrowserQuickJsRuntime;
  }
}

function render(rows: ContractRow[]): void {
  const body = document.querySelector('#rows tbody')!;
  body.replaceChildren(
    ...rows.map((r) => {
      const tr = document.createElement('tr');
      for (const text of [r.name, r.ok ? 'ok' : 'FAIL', r.detail]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.appendChild(td);
      }
      return tr;
    }),
  );
}

window.tyRunContracts = async (opts) => {
  const status = document.getElementById('status')!;
  status.textContent = 'running...';
  const rows = await runBrowserContracts(opts);
  render(rows);
  status.textContent = `${rows.filter((r) => r.ok).length}/${rows.length} passed`;
  return rows;
};
window.tyContractNames = contractNames;
window.tyBench = runBrowserBench;
window.tyInvokeManifest = invokeManifest;
window.tyBenchMcp = runMcpBench;
window.tyQuickJsRuntime = BrowserQuickJsRuntime;
document.getElementById('run')!.addEventListener('click', () => void window.tyRunContracts());
window.tyHarnessReady = true;
