// Remote MCP servers in the browser host, in real Chromium: a page's host calls a Streamable HTTP MCP server on
// loopback (the SDK's server), asked inline, denied by a rule, oversized, refused by CORS; header secrets stay hidden;
// test code, trusted side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { CHROMIUM_PATH, launchChromium } from '../../node/diagnostics/browser-driver.mjs';
import { buildOnce, openApp, removeBuild, STRICT_CSP, type AppPage } from './app-page.js';
import { closedUrl, startMcpFixture } from './mcp-http-fixture.mjs';
// @ts-expect-error: a plain ESM test peer without types
import { startModernFixture } from './mcp-modern-fixture.mjs';

const haveChromium = existsSync(CHROMIUM_PATH);
const TOKEN = 'Bearer tok-7f3a9c51e2d84b6f';
/** The strict page CSP plus the loopback MCP servers' origins (a page must list them in connect-src). */
const PAGE_CSP = `${STRICT_CSP}; connect-src 'self' http://127.0.0.1:*`;

type Fixture = Awaited<ReturnType<typeof startMcpFixture>>;
type Ty = typeof import('../../browser/index.js');
type Host = Awaited<ReturnType<Ty['createBrowserHost']>>;
interface W {
  ty: Ty;
  host: Host;
  lines: unknown[];
}

/** The visible text of the built-in dialog(s) (inside their shadow roots). */
const dialogText = (app: AppPage) =>
  app.page.evaluate(() =>
    Array.from(document.querySelectorAll('tysandbox-question'))
      .map((h) => h.shadowRoot?.textContent ?? '')
      .join('\n'),
  );

describe.skipIf(!haveChromium)('MCP in the browser host (Chromium)', () => {
  let browser: Browser;
  let fx: Fixture;
  let refusing: Fixture;
  let app: AppPage;
  beforeAll(async () => {
    await buildOnce();
    browser = await launchChromium();
    fx = await startMcpFixture({ token: TOKEN });
    refusing = await startMcpFixture({ cors: 'refuse' });
    app = await openApp({ browser, pageCsp: PAGE_CSP });
    await app.page.evaluate(
      async ({ url, token }) => {
        const w = window as unknown as W;
        w.host = await w.ty.createBrowserHost({
          dbName: `mcp-${Math.random().toString(36).slice(2)}`,
          rules: [{ scope: 'session', deny: ['mcp(fx/delete_file)'] }],
          mcpServers: [
            { name: 'fx', url, headers: { Authorization: token } },
            { name: 'fxbig', url, allow: ['big', 'echo'] },
          ],
        });
        w.lines = [];
        w.host.on('mcp-request', (l) => w.lines.push(l));
      },
      { url: fx.url, token: TOKEN },
    );
  }, 180_000);
  afterAll(async () => {
    await app?.close();
    await browser?.close();
    await fx?.close();
    await refusing?.close();
    removeBuild();
  });

  const call = (ref: string, args: unknown) =>
    app.page.evaluate(
      async ({ ref, args }) => {
        const r = await (window as unknown as W).host.invoker.invoke(ref, args);
        return r.ok
          ? { ok: true as const, result: r.result, revision: r.revision }
          : { ok: false as const, code: r.error.code, message: r.error.message };
      },
      { ref, args },
    );

  it("offers the servers' tools as SERVER__TOOL next to the sandboxed tools (host.mcp.listTools)", async () => {
    const tools = await app.page.evaluate(async () =>
      (await (window as unknown as W).host.mcp.listTools('fx')).map((t) => ({
        name: t.name,
        revision: t.revision,
        kind: t.manifest.execution.kind,
      })),
    );
    expect(tools.map((t) => t.name).sort()).toEqual([
      'fx__big',
      'fx__delete_file',
      'fx__echo',
      'fx__echo_header',
      'fx__whoami',
    ]);
    for (const t of tools) expect(t.revision).toMatch(/^b[a-z2-7]{50,}$/);
    const info = await app.page.evaluate(() => (window as unknown as W).host.mcp.servers());
    expect(info.find((s) => s.name === 'fx')).toMatchObject({
      state: 'connected',
      tools: 5,
      protocolVersion: '2025-11-25',
      headers: [{ name: 'Authorization', secret: 'mcp.fx.0' }],
    });
    expect(JSON.stringify(info)).not.toContain('tok-7f3a');
  });

  it(
    'negotiates 2026-07-28 with a server whose CORS policy lists its headers (server/discover, stateless), ' +
      'and logs the version; a 2025-era server whose policy does not is opened with the 2025 handshake, ' +
      'the fallback logged',
    async () => {
      const mod = await startModernFixture();
      try {
        const out = await app.page.evaluate(async (url) => {
          const w = window as unknown as W & { host3: Host; lines3: unknown[] };
          w.lines3 = [];
          w.host3 = await w.ty.createBrowserHost({
            dbName: `mcpm-${Math.random().toString(36).slice(2)}`,
            rules: [{ scope: 'session', allow: ['mcp(mod/echo)'] }],
            mcpServers: [{ name: 'mod', url }],
          });
          w.host3.on('mcp-request', (l) => w.lines3.push(l));
          const r = await w.host3.invoker.invoke('mod__echo', { text: 'hi' });
          return {
            result: r.ok ? String(r.result) : `error:${r.error.code} ${r.error.message}`,
            servers: w.host3.mcp.servers(),
            lines: JSON.stringify(w.lines3),
          };
        }, mod.url);
        expect(out.result).toBe('echo: hi (protocol 2026-07-28)');
        expect(out.servers.find((x) => x.name === 'mod')).toMatchObject({
          state: 'connected',
          protocolVersion: '2026-07-28',
        });
        expect(mod.methods).toContain('server/discover');
        expect(mod.methods).toContain('tools/call');
        expect(out.lines).toMatch(/"server":"mod","method":"connect","outcome":"protocol:2026-07-28"/);
        expect(out.lines).not.toContain('fallback');
      } finally {
        await mod.close();
      }
      // fx (a 2025-era server whose CORS policy does not list Mcp-Method / Mcp-Name): the probe's preflight is refused
      const fxLines = await app.page.evaluate(() => JSON.stringify((window as unknown as W).lines));
      expect(fxLines).toMatch(/"server":"fx","method":"connect","outcome":"fallback:E_MCP[A-Z_]*"/);
      expect(fxLines).toMatch(/"server":"fx","method":"connect","outcome":"protocol:2025-11-25"/);
    },
  );

  it('a tool call is asked about inline and approved through the dialog by accessible name; the header reaches the server only', async () => {
    const pending = call('fx__echo', { text: 'hello' });
    const allow = app.page.getByRole('dialog').getByRole('button', { name: 'Allow once' });
    await allow.click({ timeout: 15_000 });
    expect(await pending).toMatchObject({ ok: true, result: 'echo: hello' });
    const pending2 = call('fx__whoami', {});
    await app.page.getByRole('dialog').waitFor({ timeout: 15_000 });
    const question = await dialogText(app);
    expect(question).toContain('fx/whoami');
    expect(question).not.toContain('tok-7f3a');
    await allow.click({ timeout: 15_000 });
    // the server saw the token: it was sent as the Authorization header
    expect(await pending2).toMatchObject({ ok: true, result: 'authorized' });
    expect(fx.authSeen).toContain(TOKEN);
    const audit = await app.page.evaluate(() => (window as unknown as W).host.audit({ tool: 'fx__echo' }));
    expect(audit.map((r) => [r.kind, r.target, r.outcome])).toContainEqual(['mcp', 'fx/echo', 'ok']);
  });

  it('a server asking for input under mcp-elicit(SERVER): the dialog shows a form of the named fields; a value that does not fit is said, then it is sent; audited without values', async () => {
    const fxe = await startMcpFixture({ elicit: true });
    try {
      await app.page.evaluate(async (url) => {
        const w = window as unknown as W & { host2: Host };
        w.host2 = await w.ty.createBrowserHost({
          dbName: `mcpe-${Math.random().toString(36).slice(2)}`,
          rules: [{ scope: 'session', allow: ['mcp(fxe/ask)', 'mcp-elicit(fxe)'] }],
          mcpServers: [{ name: 'fxe', url }],
        });
      }, fxe.url);
      const pending = app.page.evaluate(async () => {
        const r = await (window as unknown as { host2: Host }).host2.invoker.invoke('fxe__ask', {});
        return r.ok ? String(r.result) : `error:${r.error.code}`;
      });
      const dialog = app.page.getByRole('dialog');
      await dialog.getByLabel('Your name (required)').fill('Ada', { timeout: 15_000 });
      const shown = await dialogText(app);
      expect(shown).toContain('Profile, please.\\u202e');
      expect(shown).not.toContain('\u202e');
      expect(shown).not.toContain('HIDDEN-NOTE');
      expect(await dialog.getByLabel('Access token (required)').getAttribute('type')).toBe('password');
      await dialog.getByLabel('Age (required)').fill('old');
      await dialog.getByLabel('Access token (required)').fill('tok-secret-99');
      await dialog.getByLabel('Colour').selectOption('red');
      await dialog.getByRole('button', { name: 'Submit' }).click();
      await expect.poll(() => dialog.getByRole('alert').textContent()).toBe('age: expected a whole number');
      await dialog.getByLabel('Age (required)').fill('36');
      await app.page.screenshot({ path: join(tmpdir(), 'tysandbox-elicit-form.png') });
      await dialog.getByRole('button', { name: 'Submit' }).click();
      expect(await pending).toBe(
        `action=accept content=${JSON.stringify({ name: 'Ada', age: 36, color: 'red', news: true, token: 'tok-secret-99' })}`,
      );
      const audit = await app.page.evaluate(() => (window as unknown as { host2: Host }).host2.audit({ tool: 'fxe' }));
      expect(audit.map((r) => [r.kind, r.outcome, (r as { elicit?: unknown }).elicit])).toContainEqual([
        'mcp-elicit',
        'ok',
        { action: 'accept', fields: ['name', 'age', 'color', 'news', 'token'], secret: ['token'] },
      ]);
      expect(JSON.stringify(audit)).not.toContain('tok-secret-99');
    } finally {
      await fxe.close();
    }
  });

  it('a deny rule refuses a browser MCP call before anything is asked or sent', async () => {
    const r = await call('fx__delete_file', { path: '/etc/passwd' });
    expect(r).toMatchObject({ ok: false, code: 'E_CAPABILITY_DENIED' });
    expect(r.ok ? '' : r.message).toContain('mcp(fx/delete_file)');
    expect(fx.calls).not.toContain('delete_file');
    expect(await app.page.getByRole('dialog').count()).toBe(0);
    const audit = await app.page.evaluate(() => (window as unknown as W).host.audit({ tool: 'fx__delete_file' }));
    expect(audit.map((r) => [r.kind, r.decision, r.list])).toContainEqual(['mcp', 'deny', 'deny']);
  });

  it("arguments are checked against the server's own schema before anything is asked (unlisted fields refused)", async () => {
    const before = fx.calls.length;
    const r = await call('fxbig__echo', { text: 'x', extra: 1 });
    expect(r).toMatchObject({ ok: false, code: 'E_INVALID_ARGS' });
    expect(fx.calls.length).toBe(before);
  });

  it('an answer over the 8 MiB message limit is a clear E_MCP_OVERSIZE error, nothing half-delivered; the next call works', async () => {
    const r = await call('fxbig__big', { bytes: 9 * 1024 * 1024 });
    expect(r).toMatchObject({ ok: false, code: 'E_MCP_OVERSIZE' });
    expect(r.ok ? '' : r.message).toMatch(/over 8 MiB/);
    expect(JSON.stringify(r).length).toBeLessThan(2000);
    const audit = await app.page.evaluate(() => (window as unknown as W).host.audit({ tool: 'fxbig__big' }));
    expect(audit.map((x) => [x.outcome, x.code])).toContainEqual(['error', 'E_MCP_OVERSIZE']);
    expect(await call('fxbig__big', { bytes: 1000 })).toMatchObject({ ok: true });
  });

  it('a server whose CORS refuses the page origin is reported as E_MCP_CORS naming CORS and the origin; a server that is down as E_MCP_UNREACHABLE', async () => {
    const down = await closedUrl();
    const out = await app.page.evaluate(
      async ({ url, down }) => {
        const host = (window as unknown as W).host;
        await host.mcp.add({ name: 'nocors', url });
        await host.mcp.add({ name: 'down', url: down });
        const info = await host.mcp.connect('nocors');
        const r = await host.invoker.invoke('nocors__echo', { text: 'x' });
        const d = await host.mcp.connect('down');
        return { info, r: r.ok ? null : r.error, d, origin: location.origin };
      },
      { url: refusing.url, down },
    );
    expect(out.info.state).toBe('failed');
    expect(out.info.error?.code).toBe('E_MCP_CORS');
    expect(out.info.error?.message).toContain('CORS');
    expect(out.info.error?.message).toContain(out.origin);
    expect(out.r?.code).toBe('E_MCP_CORS');
    expect(out.d.state).toBe('failed');
    expect(out.d.error?.code).toBe('E_MCP_UNREACHABLE');
    // the refusing server did answer (the probe), but nothing got through to it as MCP
    expect(refusing.calls).toEqual([]);
  });

  it('header values (tokens) never appear in questions, request logs, the audit, results or a sandbox', async () => {
    // a server that echoes the token back: the value is withheld from what the page gets
    const p = call('fx__echo_header', {});
    await app.page.getByRole('dialog').getByRole('button', { name: 'Allow once' }).click({ timeout: 15_000 });
    const r = await p;
    expect(r).toMatchObject({ ok: true });
    expect(JSON.stringify(r)).not.toContain('tok-7f3a');
    expect(JSON.stringify(r)).toContain('<withheld>');
    const seen = await app.page.evaluate(async () => {
      const w = window as unknown as W;
      const host = w.host;
      // a sandboxed tool that declares and is granted the secret name the header value is kept under
      const m = {
        name: 'peek',
        description: 'reads a secret',
        parameters: { type: 'object' },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          source:
            "export default async (a, ctx) => { try { return await ctx.getSecret('mcp.fx.0'); } catch (e) { return 'refused:' + e.code; } }",
        },
        capabilities: { secrets: ['mcp.fx.0'] },
      };
      const { revision } = await host.registry.install(m as never);
      await host.store.putJson('secret-grants', 'mcp.fx.0', {
        name: 'mcp.fx.0',
        grants: [{ tool: 'peek', revision, origins: [] }],
      });
      const sandbox = await host.invoker.invoke('peek', {});
      const audit = await host.audit();
      return {
        sandbox: sandbox.ok ? sandbox.result : sandbox.error.code,
        audit: JSON.stringify(audit),
        lines: JSON.stringify(w.lines),
        decisions: JSON.stringify(await host.decisions()),
        servers: JSON.stringify(host.mcp.servers()),
      };
    });
    expect(seen.sandbox).toBe('refused:E_SECRET_DENIED');
    for (const k of ['audit', 'lines', 'decisions', 'servers'] as const) expect(seen[k], k).not.toContain('tok-7f3a');
    expect(seen.lines).toContain('"method":"tools/call"');
    expect(app.console.join('\n')).not.toContain('tok-7f3a');
  });
});
