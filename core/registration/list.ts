// `tool/list` entries and their pages (1.1: `cursor`, `nextCursor`, a stable order); core, trusted side.
import { isToolName } from '../../protocol/names.js';
import { TOOL_LIST_PAGE, type ToolListPage, type ToolListResult } from '../../protocol/registration.js';
import { TyError } from '../errors.js';
import type { ToolRegistry } from '../revisions/registry.js';

/** Every tool as `tool/list` shows it, sorted by name in UTF-16 code-unit order (the same on every host and locale). */
export async function listEntries(registry: Pick<ToolRegistry, 'list' | 'binding'>): Promise<ToolListResult> {
  const out: ToolListResult = [];
  for (const t of await registry.list()) {
    const b = (t as { builtin?: boolean }).builtin ? undefined : await registry.binding(t.name);
    out.push({
      name: t.name,
      active: t.active ?? null,
      revisions: t.revisions.map((rev) => ({ revision: rev, addedAt: b?.addedAt?.[rev] ?? null })),
    });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

const CURSOR_PREFIX = 'after:';

/**
 * The cursor of the page that follows the entry named `name`. A cursor names a position, never an index: entries
 * added or removed before it do not move it, so no name is listed twice and none that exists throughout is skipped.
 */
export function cursorAfter(name: string): string {
  return `${CURSOR_PREFIX}${name}`;
}

/**
 * The name a cursor continues after.
 * @throws TyError E_USAGE (data `{ path: 'cursor' }`) for a cursor this server did not make.
 */
export function readCursor(cursor: string): string {
  const name = cursor.startsWith(CURSOR_PREFIX) ? cursor.slice(CURSOR_PREFIX.length) : '';
  if (!isToolName(name))
    throw new TyError('E_USAGE', 'invalid cursor: pass the nextCursor of the previous page unchanged', {
      path: 'cursor',
    });
  return name;
}

/**
 * One page of `entries` (sorted by name, code units): the first `limit` (default 100) after `cursor`'s name, and the
 * cursor of the next page when more follow.
 * @throws TyError E_USAGE for a cursor this server did not make.
 */
export function pageOf(entries: ToolListResult, cursor: string | undefined, limit = TOOL_LIST_PAGE): ToolListPage {
  const after = cursor === undefined ? undefined : readCursor(cursor);
  let start = 0;
  if (after !== undefined) {
    // the first entry whose name sorts after the cursor's (binary search over the sorted names)
    let lo = 0;
    let hi = entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (entries[mid]!.name <= after) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  const tools = entries.slice(start, start + limit);
  const last = tools[tools.length - 1];
  return start + limit < entries.length && last ? { tools, nextCursor: cursorAfter(last.name) } : { tools };
}
