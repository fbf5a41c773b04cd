// Unit tests for node/store/paths.ts (home resolution and layout); test side.
import { describe, expect, it } from 'vitest';
import { resolveHome, tycliPaths } from './paths.js';

describe('resolveHome', () => {
  it('prefers --home, then TYCLI_HOME, then the per-user data folder', () => {
    expect(resolveHome({ home: '/a', env: { TYCLI_HOME: '/b' }, cwd: '/c' })).toBe('/a');
    expect(resolveHome({ home: 'rel', env: {}, cwd: '/c' })).toBe('/c/rel');
    expect(resolveHome({ env: { TYCLI_HOME: '/b' }, cwd: '/c' })).toBe('/b');
    expect(resolveHome({ env: { TYCLI_HOME: 'x' }, cwd: '/c' })).toBe('/c/x');
    expect(resolveHome({ env: {}, cwd: '/c' })).toMatch(/tycli$/);
  });
  it('refuses an empty value with E_USAGE', () => {
    expect(() => resolveHome({ home: ' ', env: {} })).toThrow(expect.objectContaining({ code: 'E_USAGE' }));
    expect(() => resolveHome({ env: { TYCLI_HOME: '' } })).toThrow(expect.objectContaining({ code: 'E_USAGE' }));
  });
  it('lays out the fixed subfolders under home', () => {
    expect(tycliPaths('/h')).toEqual({
      home: '/h',
      store: '/h/store',
      config: '/h/config',
      settingsFile: '/h/config/settings.json',
      secretsFile: '/h/config/secrets.json',
      state: '/h/state',
      questions: '/h/state/questions',
      run: '/h/run',
    });
  });
});
