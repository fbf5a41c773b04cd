// Moving settings to another browser: export the connections (without keys or header values), the tools with their
// settings, the MCP servers (without header values) and the app's settings; import them back after checking all of
// it; browser app, trusted side.
import { parseManifest } from '../../../core/manifest/parse.js';
import { isTyError } from '../../../core/errors.js';
import type { ToolManifest } from '../../../protocol/manifest.js';
import type { BrowserHost } from '../../host.js';
import { MCP_SERVER_NAME_RE } from '../../mcp/servers.js';
import type { AppSettings } from '../app-db.js';
import { API_KINDS, type ApiKind } from '../models/types.js';
import { headerNameProblem, type Connections } from '../providers/connections.js';
import { presetById } from '../providers/presets.js';
import { parseOrigins } from './panel.js';

export const SETTINGS_FORMAT = 'tysandbox-settings';

/** A connection as exported: everything but its key and its header values (the names only). */
export interface ExportedConnection {
  name: string;
  api: ApiKind;
  endpoint: string;
  model: string;
  models?: string[];
  images: boolean;
  preset?: string;
  headers: string[];
}

/** The exported document. It never holds a key, a header value or a secret value. */
export interface SettingsExport {
  format: typeof SETTINGS_FORMAT;
  version: 1;
  settings: Pick<AppSettings, 'systemPrompt' | 'modelTitles' | 'stream' | 'markdown' | 'embeddingOrigins'>;
  /** The name of the default connection. */
  defaultConnection?: string;
  connections: ExportedConnection[];
  /** The active revision of each installed tool (source inlined), whether it is offered, its settings. */
  tools: { manifest: ToolManifest; offered: boolean; settings?: Record<string, unknown> }[];
  /** Remote MCP servers: name, URL and the names of their headers (values are secrets, not exported). */
  mcpServers: { name: string; url: string; headers: string[] }[];
}

export interface TransferDeps {
  settings: AppSettings;
  connections: Connections;
  host: Pick<BrowserHost, 'registry' | 'tools' | 'mcp'>;
  /** Tools not offered to the model. */
  disabled: Set<string>;
  /** Tools the app installs itself (trusted host tools): never exported or imported. */
  builtIn: readonly string[];
}

/** Build the export (no key, no header value, no secret: only names of headers). */
export async function exportSettings(d: TransferDeps): Promise<SettingsExport> {
  const s = d.settings;
  const tools: SettingsExport['tools'] = [];
  for (const b of await d.host.registry.list()) {
    if (!b.active || d.builtIn.includes(b.name)) continue;
    const { manifest } = await d.host.registry.resolve(`${b.name}@${b.active}`);
    if (manifest.execution.kind === 'trusted-native') continue;
    let settings: Record<string, unknown> | undefined;
    if (manifest.settings) {
      const v = await d.host.tools.settings(`${b.name}@${b.active}`).catch(() => undefined);
      if (v?.settingsRevision && Object.keys(v.values).length) settings = { ...v.values };
    }
    tools.push({ manifest, offered: !d.disabled.has(b.name), ...(settings ? { settings } : {}) });
  }
  const def = d.connections.defaultConnection();
  return {
    format: SETTINGS_FORMAT,
    version: 1,
    settings: {
      systemPrompt: s.systemPrompt,
      stream: s.stream,
      embeddingOrigins: [...s.embeddingOrigins],
      ...(s.modelTitles !== undefined ? { modelTitles: s.modelTitles } : {}),
      ...(s.markdown !== undefined ? { markdown: s.markdown } : {}),
    },
    ...(def ? { defaultConnection: def.name } : {}),
    connections: d.connections.all().map((c) => ({
      name: c.name,
      api: c.api,
      endpoint: c.endpoint,
      model: c.model,
      images: c.images,
      headers: [...(c.headerNames ?? [])],
      ...(c.models ? { models: [...c.models] } : {}),
      ...(c.preset ? { preset: c.preset } : {}),
    })),
    tools,
    mcpServers: d.host.mcp.servers().map((m) => ({ name: m.name, url: m.url, headers: m.headers.map((x) => x.name) })),
  };
}

const str = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max;

/**
 * Check an export completely (every tool's manifest parsed and its source checked as installing would); nothing is
 * changed here. @throws Error naming the first problem (path and why).
 */
export async function checkExport(text: string): Promise<SettingsExport> {
  const { checkToolSource } = await import('../../../core/manifest/source-check.js');
  let doc: Partial<SettingsExport>;
  try {
    doc = JSON.parse(text) as Partial<SettingsExport>;
  } catch (e) {
    throw new Error(`not JSON: ${(e as Error).message}`);
  }
  if (!doc || doc.format !== SETTINGS_FORMAT || doc.version !== 1)
    throw new Error(`not a ${SETTINGS_FORMAT} version 1 document`);
  const s = doc.settings;
  if (!s || !str(s.systemPrompt, 20_000) || typeof s.stream !== 'boolean' || !Array.isArray(s.embeddingOrigins))
    throw new Error('settings: systemPrompt (text), stream (true or false) and embeddingOrigins (a list) are needed');
  if (!Array.isArray(doc.connections) || doc.connections.length > 100)
    throw new Error('connections must be a list (at most 100)');
  doc.connections.forEach((c, i) => {
    const at = `connections[${i}]`;
    if (!c || !str(c.name, 80) || !c.name.trim()) throw new Error(`${at}: a name is needed`);
    if (!API_KINDS.includes(c.api)) throw new Error(`${at}: api must be one of ${API_KINDS.join(', ')}`);
    if (!str(c.endpoint, 2000) || (c.endpoint && !/^https?:\/\/[^\s]+$/i.test(c.endpoint)))
      throw new Error(`${at}: the endpoint must be an http(s) URL`);
    if (!str(c.model, 200) || typeof c.images !== 'boolean')
      throw new Error(`${at}: model (text) and images are needed`);
    if (!Array.isArray(c.headers) || c.headers.some((x) => typeof x !== 'string' || headerNameProblem(x)))
      throw new Error(`${at}: headers must be a list of header names`);
    if (c.models !== undefined && (!Array.isArray(c.models) || c.models.some((m) => !str(m, 200))))
      throw new Error(`${at}: models must be a list of names`);
    if (c.preset !== undefined && !presetById(c.preset)) throw new Error(`${at}: unknown preset ${String(c.preset)}`);
    const leaked = Object.keys(c).find((k) => /key|secret|token|value/i.test(k));
    if (leaked) throw new Error(`${at}: "${leaked}" is not taken (keys are never imported: enter them again)`);
  });
  if (!Array.isArray(doc.tools) || doc.tools.length > 500) throw new Error('tools must be a list (at most 500)');
  doc.tools.forEach((t, i) => {
    try {
      t.manifest = parseManifest(t?.manifest);
      checkToolSource(t.manifest);
    } catch (e) {
      throw new Error(`tools[${i}]: ${isTyError(e) ? `${e.code}: ${e.message}` : String(e)}`);
    }
    if (t.manifest.execution.kind === 'trusted-native')
      throw new Error(`tools[${i}]: a trusted-native tool is not imported`);
    if (typeof t.offered !== 'boolean') throw new Error(`tools[${i}]: offered must be true or false`);
    if (t.settings !== undefined && (typeof t.settings !== 'object' || Array.isArray(t.settings)))
      throw new Error(`tools[${i}]: settings must be an object`);
  });
  if (!Array.isArray(doc.mcpServers) || doc.mcpServers.length > 50) throw new Error('mcpServers must be a list');
  doc.mcpServers.forEach((m, i) => {
    if (!m || !str(m.name, 32) || !MCP_SERVER_NAME_RE.test(m.name) || !str(m.url, 2000) || !Array.isArray(m.headers))
      throw new Error(`mcpServers[${i}]: a name, a URL and a list of header names are needed`);
  });
  return doc as SettingsExport;
}

/**
 * Import a checked export: the app's settings; each connection (a new one, without key: its name says nothing was
 * lost; one with the same API and endpoint is kept as it is); each tool installed (an installed name with another
 * active revision keeps it: the imported one waits under Tools for "Activate"), offered as it was, its settings
 * stored; each MCP server added without its header values. Returns what the person must still do, one line each.
 */
export async function importSettings(doc: SettingsExport, d: TransferDeps): Promise<string[]> {
  const todo: string[] = [];
  const s = d.settings;
  s.systemPrompt = doc.settings.systemPrompt;
  s.stream = doc.settings.stream;
  s.embeddingOrigins = parseOrigins(doc.settings.embeddingOrigins.join('\n'));
  if (doc.settings.modelTitles !== undefined) s.modelTitles = doc.settings.modelTitles === true;
  if (doc.settings.markdown !== undefined) s.markdown = doc.settings.markdown !== false;
  const names = new Map<string, string>();
  for (const c of doc.connections) {
    const same = d.connections.all().find((x) => x.api === c.api && x.endpoint === c.endpoint);
    if (same) {
      names.set(c.name, same.id);
      continue;
    }
    const made = await d.connections.add({
      name: c.name,
      api: c.api,
      endpoint: c.endpoint,
      model: c.model,
      images: c.images,
      ...(c.models ? { models: c.models } : {}),
      ...(c.preset ? { preset: c.preset } : {}),
    });
    names.set(c.name, made.id);
    todo.push(
      `${c.name}: enter its API key${c.headers.length ? ` and the value of ${c.headers.join(', ')}` : ''} in Settings → Connections.`,
    );
  }
  const def = doc.defaultConnection ? names.get(doc.defaultConnection) : undefined;
  if (def) s.defaultConnection = def;
  for (const t of doc.tools) {
    const r = await d.host.registry.install(t.manifest);
    if (r.updateAvailable)
      todo.push(`${t.manifest.name}: another revision is active; Activate the imported one under Tools.`);
    if (t.offered) d.disabled.delete(t.manifest.name);
    else d.disabled.add(t.manifest.name);
    if (t.settings && !r.updateAvailable)
      await d.host.tools.setSettings(`${t.manifest.name}@${r.revision}`, t.settings).catch((e: unknown) => {
        todo.push(`${t.manifest.name}: its settings were not taken (${e instanceof Error ? e.message : String(e)}).`);
      });
  }
  for (const m of doc.mcpServers) {
    if (d.host.mcp.servers().some((x) => x.name === m.name)) continue;
    try {
      await d.host.mcp.add({ name: m.name, url: m.url });
      if (m.headers.length)
        todo.push(`MCP server ${m.name}: add its header ${m.headers.join(', ')} again (values are not exported).`);
    } catch (e) {
      todo.push(`MCP server ${m.name} not added: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return todo;
}
