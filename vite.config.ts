// Vitest configuration (unit tests beside the code, contracts and e2e in test/) and the browser build.
import { defineConfig } from 'vitest/config';
import { browserBuildOptions, pyodideAssetsPlugin, zodUsedOnly } from './browser/build/config.mjs';
import { quickJsPlugin } from './browser/build/quickjs.mjs';

export default defineConfig({
  test: {
    include: [
      'protocol/**/*.test.ts',
      'core/**/*.test.ts',
      'node/**/*.test.ts',
      'browser/**/*.test.ts',
      'tools/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
  // `npx vite build`: the browser library (browser/index.ts) and the diagnostics page, into dist/browser.
  build: browserBuildOptions(),
  plugins: [pyodideAssetsPlugin(), zodUsedOnly(), quickJsPlugin()],
});
