// The chat app's Settings entry "Offer tools to browser agents (WebMCP)": off by default, on registers the app's tools
// for page.webmcp, off again unregisters them, kept across a reload; axe-clean at 1280x800 and 390x844, light and dark
// (screenshots in docs/); test code, trusted side.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH, REPO_ROOT } from '../../node/diagnostics/browser-driver.mjs';
import { startAppServer } from '../../node/http/app-server.js';
import { BUILD_DIR } from './harness.js';

const ready = existsSync(CHROMIUM_PATH) && existsSync(join(BUILD_DIR, 'browser/app/index.html'));
const LABEL = 'Offer tools to browser agents (WebMCP)';

async function settings(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByRole('checkbox', { name: LABEL }).waitFor();
}

describe.skipIf(!ready)('Settings: Offer tools to browser agents (WebMCP)', () => {
  it('off by default; on offers the tools to page.webmcp, off withdraws them; kept across a reload; axe-clean', async () => {
    const server = await startAppServer({ dir: BUILD_DIR, port: 0 });
    const { chromium } = await import('playwright-core');
    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: [...CHROMIUM_ARGS, '--enable-features=WebMCP'],
      headless: true,
    });
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await ctx.newPage();
      await page.goto(server.url);
      await page.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 60_000 });
      expect(await page.webmcp.tools()).toEqual([]);
      await settings(page);
      const box = page.getByRole('checkbox', { name: LABEL });
      expect(await box.isChecked()).toBe(false);
      await box.check();
      // the setting says how many it offered once every registration is made; the agent then sees that many
      const offered = page.getByRole('status').filter({ hasText: /On: \d+ tools? offered/ });
      await offered.waitFor({ timeout: 20_000 });
      const n = Number(/On: (\d+) tool/.exec(await offered.innerText())?.[1]);
      expect(n).toBeGreaterThan(0);
      await expect.poll(async () => (await page.webmcp.tools()).length, { timeout: 20_000 }).toBe(n);
      const names = (await page.webmcp.tools()).map((t) => t.name);
      for (const scheme of ['light', 'dark'] as const) {
        for (const [w, hgt] of [
          [1280, 800],
          [390, 844],
        ] as const) {
          await page.emulateMedia({ colorScheme: scheme });
          await page.setViewportSize({ width: w, height: hgt });
          await page.getByRole('checkbox', { name: LABEL }).scrollIntoViewIfNeeded();
          const axe = await new AxeBuilder({ page }).include('.settings').analyze();
          expect(axe.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual(
            [],
          );
          await page.screenshot({ path: join(REPO_ROOT, 'docs', `app-webmcp-setting-${w}-${scheme}.png`) });
        }
      }
      await page.setViewportSize({ width: 1280, height: 800 });
      // kept: after a reload the tools are offered again without touching Settings
      await page.reload();
      await page.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 60_000 });
      await expect
        .poll(async () => (await page.webmcp.tools()).map((t) => t.name).sort(), { timeout: 20_000 })
        .toEqual([...names].sort());
      await settings(page);
      await page.getByRole('checkbox', { name: LABEL }).uncheck();
      await expect.poll(async () => (await page.webmcp.tools()).length, { timeout: 10_000 }).toBe(0);
      await ctx.close();
    } finally {
      await browser.close();
      await server.close();
    }
  }, 240_000);
});
