// Vitest configuration (unit tests beside the code, contracts and e2e in test/) and the browser build.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['protocol/**/*.test.ts', 'core/**/*.test.ts', 'node/**/*.test.ts', 'browser/**/*.test.ts', 'tools/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
