// MCP namespace definitions: 0600 files merging several servers' tools behind one schema per action; Node host, trusted
// side.
import { chmod, mkdir, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { TyError } from '../../core/errors.js';
import { NamespaceSchema, type Namespace } from '../../core/mcp/bridge/namespace.js';
import { writeFileAtomic } from '../store/atomic.js';
import { tycliPaths } from '../store/paths.js';
import { SERVER_NAME_RE, ServerNameSchema, loadSettingsFile } from './definitions.js';

/** `<home>/config/mcp-namespaces` (0700). */
export function namespacesDir(home: string): string {
  return join(tycliPaths(home).config, 'mcp-namespaces');
}

/** Validate a namespace document. @throws TyError E_INVALID_SETTINGS naming the field. */
export function parseNamespace(raw: unknown, label: string): Namespace {
  const r = NamespaceSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const at = issue?.path.length ? issue.path.join('.') : '(root)';
    throw new TyError(
      'E_INVALID_SETTINGS',
      `MCP namespace ${label} is refused at ${at}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return r.data;
}

export async function saveNamespace(home: string, ns: Namespace): Promise<void> {
  const dir = namespacesDir(home);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  await writeFileAtomic(join(dir, `${ns.name}.json`), JSON.stringify(ns, null, 2) + '\n', { mode: 0o600 });
}

/**
 * Load a namespace, or undefined when there is none. Checked on every call (one lstat; read, parsed and
 * validated again whenever the file changed: node/mcp/definitions.ts loadSettingsFile).
 * @throws TyError E_INVALID_SETTINGS: unknown fields, a symlink, a file others may read, a name mismatch.
 */
export async function loadNamespace(home: string, name: string): Promise<Namespace | undefined> {
  if (!SERVER_NAME_RE.test(name)) return undefined;
  return loadSettingsFile(join(namespacesDir(home), `${name}.json`), `MCP namespace "${name}"`, (raw) => {
    const ns = parseNamespace(raw, `"${name}"`);
    if (ns.name !== name)
      throw new TyError('E_INVALID_SETTINGS', `MCP namespace file "${name}" names another namespace`);
    return ns;
  });
}

export async function listNamespaces(home: string): Promise<string[]> {
  try {
    return (await readdir(namespacesDir(home)))
      .filter((n) => n.endsWith('.json'))
      .map((n) => n.slice(0, -5))
      .filter((n) => ServerNameSchema.safeParse(n).success)
      .sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

export async function removeNamespace(home: string, name: string): Promise<boolean> {
  if (!ServerNameSchema.safeParse(name).success) return false;
  try {
    await unlink(join(namespacesDir(home), `${name}.json`));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}
