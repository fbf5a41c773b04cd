// "Did you mean": the nearest known tool, command or option to what was typed; Node host, trusted side.

export { distance, nearest } from '../../core/nearest.js';
import { nearest } from '../../core/nearest.js';

/**
 * For "no tool named X" (`data.name`, no revision): `data` plus `suggestion`, the nearest installed tool name (or
 * built-in) when one is close; node/cli/hints.ts renders it. Other data is returned as it is.
 */
export async function suggestTool(
  data: Record<string, unknown> | undefined,
  home: string,
): Promise<Record<string, unknown> | undefined> {
  const name = data?.name;
  if (
    !data ||
    typeof name !== 'string' ||
    data.prefix !== undefined ||
    data.revision !== undefined ||
    data.candidates !== undefined
  )
    return data;
  try {
    const { FileStoreBackend } = await import('../store/file-store.js');
    const { tycliPaths } = await import('../store/paths.js');
    const names = [...(await new FileStoreBackend(tycliPaths(home).store).list('bindings')), 'python'];
    const s = nearest(name, names);
    return s ? { ...data, suggestion: s } : data;
  } catch {
    return data; // no store yet: nothing to suggest
  }
}
