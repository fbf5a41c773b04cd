// The browser host's app API in real Chromium: one typed event emitter (calls, questions, sandboxes, logs with call id
// and tool), audit and decisions, pause and resume, Python prewarm and load progress; test code, trusted side.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { CHROMIUM_PATH } from '../../node/diagnostics/browser-driver.mjs';
import { openApp, useAppBrowser } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);
type Ty = typeof import('../../browser/index.js');

const LOGGER = {
  name: 'logger',
  description: 'logs and fetches',
  parameters: { type: 'object', properties: { url: { type: 'string' } }, additionalProperties: false },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source:
      "export default async ({ url }) => { console.log('working on', url ?? 'nothing'); if (url) { try { await fetch(url); } catch (e) { return String(e.code || e.name); } } return 'done'; }",
  },
  capabilities: { fetch: [{ origin: 'https://api.example.invalid', access: 'read' }] },
};

describe.skipIf(!haveChromium)('browser host API in Chromium', () => {
  const browser = useAppBrowser();

  it('events: call start/end, question asked/answered, sandbox started, logs with call id and tool; audit and permanent decisions can be read and revoked', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const out = await app.page.evaluate(async (manifest) => {
        await new Promise((r) => setTimeout(r, 0));
        const ty = (window as unknown as { ty: Ty }).ty;
        const host = await ty.createBrowserHost({
          dbName: `api-${Math.random().toString(36).slice(2)}`,
          dialog: false,
        });
        const seen: { name: string; e: Record<string, unknown> }[] = [];
        for (const name of [
          'call-start',
          'call-end',
          'question-asked',
          'question-answered',
          'sandbox-started',
          'sandbox-destroyed',
          'log',
        ] as const)
          host.on(name, (e) => seen.push({ name, e: e as Record<string, unknown> }));
        host.approvals.subscribe((q) => q.answer('always'));
        await host.registry.install(manifest);
        const r = await host.invoke('logger', { url: 'https://api.example.invalid/x' });
        const decisions = await host.decisions();
        const audit = await host.audit({ tool: 'logger' });
        const revoked = await host.revokeDecision({ tool: 'logger' });
        const after = await host.decisions();
        await host.close();
        return {
          r,
          seen,
          decisions,
          audit: audit.map((a) => ({ kind: a.kind, decision: a.decision, channel: a.channel })),
          revoked,
          after,
        };
      }, LOGGER);
      expect(out.r).toMatchObject({ ok: true, result: 'E_FETCH_FAILED' });
      const names = out.seen.map((s) => s.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'call-start',
          'sandbox-started',
          'log',
          'question-asked',
          'question-answered',
          'call-end',
          'sandbox-destroyed',
        ]),
      );
      expect(names.indexOf('call-start')).toBeLessThan(names.indexOf('sandbox-started'));
      expect(names.indexOf('question-answered')).toBeLessThan(names.indexOf('call-end'));
      const log = out.seen.find((s) => s.name === 'log')!.e;
      expect(log).toMatchObject({
        callId: out.r.callId,
        tool: 'logger',
        level: 'info',
        text: expect.stringContaining('working on https://api.example.invalid/x'),
      });
      expect(out.seen.find((s) => s.name === 'question-answered')!.e).toMatchObject({
        tool: 'logger',
        allow: true,
        scope: 'permanent',
        channel: 'app',
      });
      expect(out.seen.find((s) => s.name === 'question-asked')!.e).toMatchObject({
        tool: 'logger',
        capability: 'fetch',
        target: 'https://api.example.invalid',
      });
      expect(out.seen.find((s) => s.name === 'call-end')!.e).toMatchObject({
        callId: out.r.callId,
        tool: 'logger',
        ok: true,
      });
      expect(out.decisions.filter((d) => d.scope === 'permanent')).toMatchObject([
        { toolName: 'logger', kind: 'fetch', target: 'https://api.example.invalid', allow: true },
      ]);
      expect(out.audit).toEqual(expect.arrayContaining([{ kind: 'fetch', decision: 'allow', channel: 'app' }]));
      expect(out.revoked).toBeGreaterThanOrEqual(2); // the permanent one and this session's
      expect(out.after).toEqual([]);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('no channel: refused at once and not counted toward the pause; refusals pause, the pause is listed, expires and is lifted by host.resume', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const out = await app.page.evaluate(async (manifest) => {
        await new Promise((r) => setTimeout(r, 0));
        const ty = (window as unknown as { ty: Ty }).ty;
        const host = await ty.createBrowserHost({
          dbName: `pause-${Math.random().toString(36).slice(2)}`,
          dialog: false,
          pause: { maxRefusals: 3, windowMs: 60_000, expireMs: 1500 },
        });
        await host.registry.install(manifest);
        const codes: string[] = [];
        // nobody subscribed and no dialog: each refused at once for lack of a channel, never pausing the tool
        for (let i = 0; i < 5; i++) {
          const r = await host.invoke('logger', { url: 'https://api.example.invalid/' });
          codes.push(r.ok ? String(r.result) : r.error.code);
        }
        const pausedAfterNoChannel = await host.paused();
        const stop = host.approvals.subscribe((q) => q.answer('deny'));
        for (let i = 0; i < 3; i++) await host.invoke('logger', { url: 'https://api.example.invalid/' });
        stop();
        const paused = await host.paused();
        const blocked = await host.invoke('logger', {});
        await new Promise((r) => setTimeout(r, 1700));
        const expired = await host.paused();
        const again = host.approvals.subscribe((q) => q.answer('deny'));
        for (let i = 0; i < 3; i++) await host.invoke('logger', { url: 'https://api.example.invalid/' });
        again();
        const resumed = await host.resume('logger');
        const afterResume = await host.invoke('logger', {});
        await host.close();
        return { codes, pausedAfterNoChannel, paused, blocked, expired, resumed, afterResume };
      }, LOGGER);
      expect(out.codes).toEqual(Array(5).fill('E_CAPABILITY_DENIED'));
      expect(out.pausedAfterNoChannel).toEqual([]);
      expect(out.paused).toMatchObject([{ tool: 'logger', count: 3 }]);
      expect(out.paused[0]!.until).toBeGreaterThan(out.paused[0]!.at);
      expect(out.blocked).toMatchObject({
        ok: false,
        error: { code: 'E_PAUSED', message: expect.stringContaining('host.resume("logger")') },
      });
      expect(out.blocked.ok ? '' : out.blocked.error.message).not.toMatch(/tycli/);
      expect(out.expired).toEqual([]);
      expect(out.resumed).toBe(true);
      expect(out.afterResume).toMatchObject({ ok: true, result: 'done' });
    } finally {
      await app.close();
    }
  }, 120_000);

  it('lifecycle: unparsable source refused with line:column; an update is announced (result and event); remove keeps pinned calls working; gc collects what nothing keeps', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const out = await app.page.evaluate(async () => {
        await new Promise((r) => setTimeout(r, 0));
        const ty = (window as unknown as { ty: Ty }).ty;
        const host = await ty.createBrowserHost({ dbName: `life-${Math.random().toString(36).slice(2)}` });
        const m = (source: string) => ({
          name: 'life',
          description: 'd',
          parameters: { type: 'object' },
          execution: { kind: 'sandboxed-code' as const, runtime: 'javascript' as const, source },
        });
        const bad = await host.registry.install(m('export default async () => {\n  return (1;\n}')).then(
          () => null,
          (e: { code: string; message: string; data: unknown }) => ({ code: e.code, message: e.message, data: e.data }),
        );
        const updates: unknown[] = [];
        host.on('update-available', (e) => updates.push(e));
        const v1 = await host.registry.install(m('export default async () => 1'));
        const v2 = await host.registry.install(m('export default async () => 2'));
        const before = await host.invoke('life', {});
        await host.registry.activate('life', v2.revision, { approveReplacement: true });
        const after = await host.invoke('life', {});
        await host.registry.remove('life', { approveRemoval: true });
        const byName = await host.invoke('life', {});
        const pinned = await host.invoke(`life@${v1.revision}`, {});
        const gc = await host.registry.gc();
        await host.close();
        return {
          bad,
          v1: { revision: v1.revision, updateAvailable: v1.updateAvailable },
          v2: { updateAvailable: v2.updateAvailable, active: v2.active, revision: v2.revision },
          updates,
          before,
          after,
          byName,
          pinned,
          gc,
        };
      });
      expect(out.bad).toMatchObject({
        code: 'E_INVALID_MANIFEST',
        data: { path: 'execution.source', line: 2, column: 12 },
      });
      expect(out.bad!.message).toContain('line 2, column 12');
      expect(out.v1.updateAvailable).toBe(false);
      expect(out.v2).toMatchObject({ updateAvailable: true, active: out.v1.revision });
      expect(out.updates).toEqual([{ name: 'life', active: out.v1.revision, revision: out.v2.revision }]);
      expect(out.before).toMatchObject({ ok: true, result: 1 });
      expect(out.after).toMatchObject({ ok: true, result: 2 });
      expect(out.byName).toMatchObject({ ok: false, error: { code: 'E_UNKNOWN_TOOL' } });
      expect(out.pinned).toMatchObject({ ok: true, result: 1 });
      expect((out.gc as { removed: { revision: string }[] }).removed.map((r) => r.revision).sort()).toEqual(
        [out.v1.revision, out.v2.revision].sort(),
      );
    } finally {
      await app.close();
    }
  }, 120_000);

  it('host.prewarm("python") fetches and verifies the Pyodide files once per page with progress events; the first Python call reuses them', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const out = await app.page.evaluate(async () => {
        await new Promise((r) => setTimeout(r, 0));
        const ty = (window as unknown as { ty: Ty }).ty;
        const host = await ty.createBrowserHost({
          dbName: `py-${Math.random().toString(36).slice(2)}`,
          sandbox: { pyodide: ty.PYODIDE_MANIFEST },
        });
        const progress: { phase: string; loaded: number; total: number; cached?: boolean }[] = [];
        host.on('python-progress', (p) => progress.push(p));
        await host.prewarm('python');
        const afterPrewarm = progress.length;
        await host.registry.install({
          name: 'py',
          description: 'py',
          parameters: { type: 'object' },
          execution: { kind: 'sandboxed-code', runtime: 'python', source: 'def main(args, ctx):\n  return 6 * 7\n' },
        });
        const r = await host.invoke('py', {});
        const pyFetches = performance.getEntriesByType('resource').filter((e) => e.name.includes('/pyodide/')).length;
        await host.close();
        return { progress, afterPrewarm, r, pyFetches, files: Object.keys(ty.PYODIDE_MANIFEST.files).length };
      });
      expect(out.r).toMatchObject({ ok: true, result: 42 });
      const phases = out.progress.slice(0, out.afterPrewarm).map((p) => p.phase);
      expect(phases[0]).toBe('fetch');
      expect(phases).toContain('verify');
      expect(phases[phases.length - 1]).toBe('ready');
      const fetches = out.progress.filter((p) => p.phase === 'fetch');
      expect(fetches[fetches.length - 1]!.loaded).toBe(fetches[0]!.total);
      expect(fetches[0]!.total).toBeGreaterThan(5_000_000);
      expect(out.progress.slice(out.afterPrewarm)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ phase: 'ready', cached: true }),
          expect.objectContaining({ phase: 'start' }),
        ]),
      );
      expect(out.pyFetches).toBe(out.files); // each file fetched once for the page
    } finally {
      await app.close();
    }
  }, 180_000);
  it('host.tools.settings / setSettings: settings revisions in IndexedDB bound to a tool revision, ' +
    'ctx.settings in the worker, --from carry-over re-validated, secret-like fields refused', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const out = await app.page.evaluate(async () => {
        await new Promise((r) => setTimeout(r, 0));
        const ty = (window as unknown as { ty: Ty }).ty;
        const dbName = `settings-${Math.random().toString(36).slice(2)}`;
        const schema = (max: number) => ({
          type: 'object',
          properties: {
            units: { type: 'string', enum: ['metric', 'imperial'], default: 'metric' },
            digits: { type: 'integer', minimum: 0, maximum: max },
          },
          additionalProperties: false,
        });
        const tool = (max: number, d: string) => ({
          name: 'conv',
          description: d,
          parameters: { type: 'object', properties: {}, additionalProperties: false },
          settings: schema(max),
          execution: {
            kind: 'sandboxed-code',
            runtime: 'javascript',
            source: 'export default async (a, ctx) => ctx.settings',
          },
        });
        const code = (p: Promise<unknown>) =>
          p.then(
            () => 'resolved',
            (e: { code?: string }) => e.code ?? String(e),
          );
        let host = await ty.createBrowserHost({ dbName, dialog: false });
        const v1 = await host.registry.install(tool(9, 'v1'));
        const before = await host.tools.settings('conv');
        const defaults = await host.invoke('conv', {});
        const s1 = await host.tools.setSettings('conv', { units: 'imperial', digits: 7 });
        const ran = await host.invoke('conv', {});
        const bad = await code(host.tools.setSettings('conv', { units: 'kelvin' }));
        await host.close();
        // A new page load of the same database: the settings are still there.
        host = await ty.createBrowserHost({ dbName, dialog: false });
        const reloaded = await host.tools.settings('conv');
        const v2 = await host.registry.install(tool(5, 'v2'));
        await host.registry.activate('conv', v2.revision, { approveReplacement: true });
        const fresh = await host.tools.settings('conv');
        const tooBig = await code(host.tools.setSettings('conv', {}, { from: v1.revision }));
        const carried = await host.tools.setSettings('conv', { digits: 3 }, { from: `conv@${v1.revision}` });
        const ran2 = await host.invoke('conv', {});
        const secret = await code(
          host.registry.install({
            ...tool(5, 'leaky'),
            settings: { type: 'object', properties: { apiKey: { type: 'string' } } },
          }),
        );
        const audit = (await host.audit({ tool: 'conv' })).filter((a) => a.kind === 'settings').map((a) => a.target);
        await host.close();
        return {
          before,
          defaults,
          s1,
          ran,
          bad,
          reloaded,
          fresh,
          tooBig,
          carried,
          ran2,
          secret,
          audit,
          v1: v1.revision,
          v2: v2.revision,
        };
      });
      expect(out.before).toMatchObject({ name: 'conv', revision: out.v1, values: {}, effective: { units: 'metric' } });
      expect(out.before.settingsRevision).toBeUndefined();
      expect(out.defaults).toMatchObject({ ok: true, result: { units: 'metric' } });
      expect(out.s1.settingsRevision).toMatch(/^bagaaiera/);
      expect(out.ran).toMatchObject({
        ok: true,
        settingsRevision: out.s1.settingsRevision,
        result: { units: 'imperial', digits: 7 },
      });
      expect(out.bad).toBe('E_INVALID_SETTINGS');
      expect(out.reloaded).toMatchObject({
        settingsRevision: out.s1.settingsRevision,
        values: { units: 'imperial', digits: 7 },
      });
      expect(out.fresh).toMatchObject({ revision: out.v2, values: {} });
      expect(out.fresh.settingsRevision).toBeUndefined();
      expect(out.tooBig).toBe('E_INVALID_SETTINGS');
      expect(out.carried).toMatchObject({ revision: out.v2, values: { units: 'imperial', digits: 3 } });
      expect(out.ran2).toMatchObject({
        ok: true,
        revision: out.v2,
        settingsRevision: out.carried.settingsRevision,
        result: { units: 'imperial', digits: 3 },
      });
      expect(out.secret).toBe('E_INVALID_MANIFEST');
      expect(out.audit).toEqual([out.s1.settingsRevision, out.carried.settingsRevision]);
    } finally {
      await app.close();
    }
  }, 120_000);
});
