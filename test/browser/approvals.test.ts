// Approvals an app renders itself (host.approvals) and the style-isolated built-in dialog, in real Chromium under a
// strict page CSP; test code, trusted side.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM_PATH } from '../../node/diagnostics/browser-driver.mjs';
import { openApp, useAppBrowser } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);

/** A tool that fetches `url` and reports the outcome's code (E_FETCH_FAILED: allowed, then no such host). */
const FETCHER = {
  name: 'fetcher',
  description: 'fetches one URL',
  parameters: {
    type: 'object',
    properties: { url: { type: 'string' } },
    required: ['url'],
    additionalProperties: false,
  },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source:
      "export default async ({ url }) => { try { const r = await fetch(url); return 'status:' + r.status; } catch (e) { return String(e.code || e.name); } }",
  },
  capabilities: {
    fetch: [
      { origin: 'https://api.example.invalid', access: 'read' },
      { origin: 'https://other.example.invalid', access: 'read' },
    ],
  },
};

describe.skipIf(!haveChromium)('approvals in Chromium', () => {
  const browser = useAppBrowser();

  it('the app renders a fetch question from host.approvals in its own UI and answers it (session, then deny)', async () => {
    const app = await openApp({ browser: browser() });
    try {
      await app.page.evaluate(async (manifest) => {
        await new Promise((r) => setTimeout(r, 0));
        const ty = (window as unknown as { ty: typeof import('../../browser/index.js') }).ty;
        const host = await ty.createBrowserHost({
          dbName: `appr-${Math.random().toString(36).slice(2)}`,
          dialog: false,
        });
        const w = window as unknown as Record<string, unknown>;
        w.host = host;
        w.seen = [];
        // The app's own rendering: a card per question with one button per choice, inside its conversation.
        host.approvals.subscribe((q) => {
          (w.seen as unknown[]).push({ ...q, signal: undefined, answer: undefined, withdrawnAtAsk: q.signal.aborted });
          const card = document.createElement('section');
          card.setAttribute('aria-label', `Approval: ${q.title}`);
          const h = document.createElement('h3');
          h.textContent = q.title;
          card.append(h);
          const labels: Record<string, string> = {
            deny: 'Deny',
            once: 'Allow once',
            session: 'Allow for this session',
            always: 'Always allow',
          };
          for (const c of q.choices) {
            const b = document.createElement('button');
            b.textContent = labels[c]!;
            b.addEventListener('click', () => {
              q.answer(c);
              card.remove();
            });
            card.append(b);
          }
          document.getElementById('chat')!.append(card);
        });
        await host.registry.install(manifest);
      }, FETCHER);
      const call = (url: string) =>
        app.page.evaluate(async (url) => {
          const host = (
            window as unknown as {
              host: Awaited<ReturnType<typeof import('../../browser/index.js').createBrowserHost>>;
            }
          ).host;
          const r = await host.invoker.invoke('fetcher', { url });
          return r.ok ? String(r.result) : `error:${r.error.code}`;
        }, url);

      const first = call('https://api.example.invalid/forecast?city=Paris');
      await app.page.getByRole('button', { name: 'Allow for this session' }).click({ timeout: 15_000 });
      expect(await first).toBe('E_FETCH_FAILED'); // allowed; the host does not exist
      const seen = (await app.page.evaluate(() => (window as unknown as { seen: unknown[] }).seen)) as Record<
        string,
        unknown
      >[];
      expect(seen).toHaveLength(1);
      const q = seen[0]!;
      expect(q).toMatchObject({
        tool: 'fetcher',
        capability: 'fetch',
        access: 'read',
        target: 'https://api.example.invalid',
        choices: ['deny', 'once', 'session', 'always'],
        withdrawnAtAsk: false,
      });
      expect(String(q.revision)).toMatch(/^b[a-z2-7]{50,}$/);
      // The short id: 12 digest characters after the constant CID head (what the CLI prints and accepts back).
      expect(String(q.revisionShort)).toBe(String(q.revision).slice(9, 21));
      expect(q.title).toBe('Allow “fetcher” to read from https://api.example.invalid?');
      expect((q.argsPreview as string[]).join('\n')).toContain('city=Paris');
      const shown = [q.title, ...(q.text as string[])].join('\n');
      expect(shown).not.toMatch(/principal|--allow|tycli/);

      // the session answer covers the next identical request: no question
      expect(await call('https://api.example.invalid/again')).toBe('E_FETCH_FAILED');
      const denied = call('https://other.example.invalid/');
      await app.page.getByRole('button', { name: 'Deny' }).click({ timeout: 15_000 });
      expect(await denied).toBe('E_CAPABILITY_DENIED');
      const count = await app.page.evaluate(() => (window as unknown as { seen: unknown[] }).seen.length);
      expect(count).toBe(2);
      const audit = await app.page.evaluate(async () => {
        const host = (
          window as unknown as { host: Awaited<ReturnType<typeof import('../../browser/index.js').createBrowserHost>> }
        ).host;
        return (
          await host.store.readJsonl<{ channel?: string; kind: string; decision: string }>('audit')
        ).entries.filter((e) => e.kind === 'fetch');
      });
      expect(audit.map((e) => [e.decision, e.channel])).toContainEqual(['allow', 'app']);
      expect(audit.map((e) => [e.decision, e.channel])).toContainEqual(['deny', 'app']);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('the built-in dialog stays visible and usable under page CSS that hides dialogs and buttons; another channel is withdrawn when it answers', async () => {
    const app = await openApp({ browser: browser(), hostileCss: true });
    try {
      await app.page.evaluate(async (manifest) => {
        await new Promise((r) => setTimeout(r, 0));
        const ty = (window as unknown as { ty: typeof import('../../browser/index.js') }).ty;
        const host = await ty.createBrowserHost({ dbName: `dlg-${Math.random().toString(36).slice(2)}` });
        const w = window as unknown as Record<string, unknown>;
        w.host = host;
        host.approvals.subscribe((q) => {
          w.appQuestion = q;
        });
        await host.registry.install(manifest);
        w.pending = host.invoker
          .invoke('fetcher', { url: 'https://api.example.invalid/' })
          .then((r) => (r.ok ? String(r.result) : `error:${r.error.code}`));
      }, FETCHER);
      const dialog = app.page.getByRole('dialog');
      await dialog.waitFor({ state: 'visible', timeout: 15_000 });
      const box = await dialog.boundingBox();
      expect(box && box.width > 100 && box.height > 50).toBe(true);
      const text = await dialog.innerText();
      expect(text).toContain('Allow “fetcher” to read from https://api.example.invalid?');
      expect(text).not.toMatch(/principal|--allow|tycli/);
      const rev = String(
        await app.page.evaluate(
          () => (window as unknown as { appQuestion: { revision: string } }).appQuestion.revision,
        ),
      );
      expect(text).toContain(`Version ${rev.slice(9, 21)}`);
      expect(text).not.toContain(`Version ${rev.slice(0, 12)}`);
      const dir = mkdtempSync(join(tmpdir(), 'ty-dialog-'));
      await app.page.screenshot({ path: join(dir, 'dialog.png') });
      process.stdout.write(`dialog screenshot: ${join(dir, 'dialog.png')}\n`);
      const deny = app.page.getByRole('button', { name: 'Deny' });
      expect(await deny.isVisible()).toBe(true);
      await deny.click();
      const r = await app.page.evaluate(() => (window as unknown as { pending: Promise<string> }).pending);
      expect(r).toBe('E_CAPABILITY_DENIED');
      const withdrawn = await app.page.evaluate(
        () => (window as unknown as { appQuestion?: { signal: AbortSignal } }).appQuestion?.signal.aborted,
      );
      expect(withdrawn).toBe(true);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('a question while the tab is hidden waits (not refused) and shows in the dialog when the tab is visible again', async () => {
    const app = await openApp({ browser: browser() });
    // Headless Chromium keeps every page visible, so the page's visibility is set as the browser would report it:
    // document.visibilityState plus the visibilitychange event the host listens to.
    const setVisibility = (state: 'hidden' | 'visible') =>
      app.page.evaluate((v) => {
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => v });
        document.dispatchEvent(new Event('visibilitychange'));
      }, state);
    try {
      await app.page.evaluate(async (manifest) => {
        await new Promise((r) => setTimeout(r, 0));
        const ty = (window as unknown as { ty: typeof import('../../browser/index.js') }).ty;
        const host = await ty.createBrowserHost({
          dbName: `hid-${Math.random().toString(36).slice(2)}`,
          askWaitMs: 60_000,
        });
        const w = window as unknown as Record<string, unknown>;
        w.host = host;
        await host.registry.install(manifest);
      }, FETCHER);
      await setVisibility('hidden');
      await app.page.evaluate(() => {
        const w = window as unknown as {
          host: Awaited<ReturnType<typeof import('../../browser/index.js').createBrowserHost>>;
          pending: Promise<string>;
          settled?: string;
        };
        w.pending = w.host
          .invoke('fetcher', { url: 'https://api.example.invalid/' })
          .then((r) => (w.settled = r.ok ? String(r.result) : `error:${r.error.code}`));
      });
      await new Promise((r) => setTimeout(r, 1500));
      const whileHidden = await app.page.evaluate(() => ({
        settled: (window as unknown as { settled?: string }).settled,
        dialogs: document.querySelectorAll('tysandbox-question').length,
        visibility: document.visibilityState,
      }));
      expect(whileHidden).toEqual({ settled: undefined, dialogs: 0, visibility: 'hidden' }); // waiting, not refused
      await setVisibility('visible');
      await app.page.getByRole('button', { name: 'Allow once' }).click({ timeout: 15_000 });
      expect(await app.page.evaluate(() => (window as unknown as { pending: Promise<string> }).pending)).toBe(
        'E_FETCH_FAILED',
      ); // allowed
    } finally {
      await app.close();
    }
  }, 120_000);
});
