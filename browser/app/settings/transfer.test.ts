// A settings import is checked whole before anything changes: keys, secrets and bad fields are refused with where and
// why; unit tests of browser app code (no DOM).
import { describe, expect, it } from 'vitest';
import { checkExport, SETTINGS_FORMAT } from './transfer.js';

const base = () => ({
  format: SETTINGS_FORMAT,
  version: 1,
  settings: { systemPrompt: 'Be brief.', stream: true, embeddingOrigins: [] as string[] },
  connections: [
    {
      name: 'Local',
      api: 'openai',
      endpoint: 'http://127.0.0.1:11434/v1',
      model: 'llama3.2',
      images: false,
      headers: [],
    },
  ] as Record<string, unknown>[],
  tools: [] as unknown[],
  mcpServers: [] as unknown[],
});

describe('checkExport', () => {
  it('accepts a well-formed document', async () => {
    const doc = await checkExport(JSON.stringify(base()));
    expect(doc.connections[0]!.name).toBe('Local');
  });
  it('refuses any key, token, secret or value field on a connection, naming it', async () => {
    for (const field of ['apiKey', 'key', 'token', 'secret', 'headerValues']) {
      const d = base();
      d.connections[0]![field] = 'sk-should-never-travel';
      await expect(checkExport(JSON.stringify(d))).rejects.toThrow(
        new RegExp(`connections\\[0\\]: "${field}" is not taken`),
      );
    }
  });
  it('refuses what is not an export, a bad endpoint, a header the app sets itself, an unknown API', async () => {
    await expect(checkExport('{not json')).rejects.toThrow(/^not JSON/);
    await expect(checkExport(JSON.stringify({ ...base(), format: 'other' }))).rejects.toThrow(
      /not a tysandbox-settings/,
    );
    const bad = (patch: Record<string, unknown>) => {
      const d = base();
      Object.assign(d.connections[0]!, patch);
      return checkExport(JSON.stringify(d));
    };
    await expect(bad({ endpoint: 'javascript:alert(1)' })).rejects.toThrow(/endpoint must be an http\(s\) URL/);
    await expect(bad({ headers: ['Authorization'] })).rejects.toThrow(/headers must be a list of header names/);
    await expect(bad({ api: 'gemini' })).rejects.toThrow(/api must be one of/);
    await expect(bad({ preset: 'nope' })).rejects.toThrow(/unknown preset/);
  });
  it('refuses a tool whose manifest does not parse, with its place', async () => {
    const d = base();
    d.tools = [{ manifest: { name: 'x' }, offered: true }];
    await expect(checkExport(JSON.stringify(d))).rejects.toThrow(/^tools\[0\]: /);
  });
});
