// Task compilation: pin every function call to a revision, then content-address the task; core, trusted side.
import {
  DraftTaskSchema,
  TaskSchema,
  type DraftTask,
  type Task,
  type TaskContent,
  type ToolSignature,
} from '../../protocol/task.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { TyError } from '../errors.js';
import { DOMAINS, contentId, isContentId } from './cid.js';
import { revisionId, type ToolRegistry } from './registry.js';
import { parseManifest } from '../manifest/parse.js';

/** What a lexically scoped definition provides to its descendants. */
interface ScopedDefinition {
  name: string;
  revision: string;
  /** Present for inline sandboxed-code definitions; absent for bindings to a registry revision. */
  manifest?: ToolManifest;
}

export interface CompileOptions {
  /** Used for calls no visible tooldefinition covers, and to check pinned references. */
  registry?: Pick<ToolRegistry, 'resolve'>;
  /** Already compiled tasks the drafts may name as parents (typically the ancestors of the batch). */
  lineage?: Task[];
  /**
   * Pins each call's settings revision next to its tool revision, before the task is hashed (core/revisions/settings.ts
   * ToolSettings.pin): a draft's own settingsRevision is checked to belong to the pinned tool revision, else the
   * current one is taken (none when the tool revision has no settings revision).
   */
  settings?: { pin(name: string, toolRevision: string, requested?: string): Promise<string | undefined> };
}

/**
 * The content id of a task: CIDv1 over canonical `{"body": {role, parent?, content, state?}, "domain":
 * "tysandbox/task/v1"}`.
 */
export async function taskId(t: Omit<Task, 'id'>): Promise<string> {
  const body = { role: t.role, parent: t.parent, content: t.content, state: t.state };
  return contentId(DOMAINS.task, body, 'E_INVALID_TASK');
}

function invalid(message: string): TyError {
  return new TyError('E_INVALID_TASK', message);
}

async function definitionOf(t: Task): Promise<ScopedDefinition | undefined> {
  if (t.content.type !== 'tooldefinition') return undefined;
  const d = t.content.definition;
  if ('manifest' in d) {
    const manifest = parseManifest(d.manifest);
    if (manifest.execution.kind !== 'sandboxed-code')
      throw invalid(
        `a tooldefinition task may hold only sandboxed code or a binding to a registry revision ("${manifest.name}" is ${manifest.execution.kind})`,
      );
    return { name: manifest.name, revision: await revisionId(manifest), manifest };
  }
  return { name: d.binding.name, revision: d.binding.toolRevision };
}

/**
 * Compile drafts into tasks. For each draft, in order: resolve its parent (a compiled task id from
 * `lineage` or an earlier draft of the batch, or the index of an earlier draft), pin every
 * `functioncall` to a revision (first the nearest `tooldefinition` among its ancestors, which is
 * scoped to its descendants and never installed; else the registry's active binding), and only then
 * hash the task into its id.
 * @throws TyError E_INVALID_TASK (malformed draft, unknown or forward parent, unhashed task in the chain),
 *   E_UNPINNED_TASK (a call that no definition or registry binding resolves), E_UNKNOWN_TOOL, E_INTEGRITY.
 */
export async function compileDrafts(drafts: unknown[], opts: CompileOptions = {}): Promise<Task[]> {
  if (!Array.isArray(drafts)) throw invalid('drafts must be an array');
  if (drafts.length > 1000) throw invalid('at most 1000 drafts at once');
  const known = new Map<string, Task>();
  for (const t of opts.lineage ?? []) {
    const parsed = TaskSchema.safeParse(t);
    if (!parsed.success || !isContentId(parsed.data.id))
      throw invalid('the lineage holds a task without a valid id: a chain mixing hashed and unhashed tasks is refused');
    const expected = await taskId(parsed.data);
    if (expected !== parsed.data.id)
      throw new TyError('E_INTEGRITY', `lineage task ${parsed.data.id} does not match its content`);
    known.set(parsed.data.id, parsed.data);
  }
  const out: Task[] = [];
  for (let i = 0; i < drafts.length; i++) {
    const raw = drafts[i] as Record<string, unknown> | undefined;
    if (raw && typeof raw === 'object' && 'id' in raw)
      throw invalid(`draft ${i} already has an id: a chain mixing hashed and unhashed tasks is refused`);
    const r = DraftTaskSchema.safeParse(raw);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw invalid(`draft ${i} at ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
    }
    const draft: DraftTask = r.data;
    let parent: string | undefined;
    if (typeof draft.parent === 'number') {
      const p = out[draft.parent];
      if (draft.parent >= i || !p)
        throw invalid(`draft ${i} names draft ${draft.parent} as parent; a parent must come earlier in the batch`);
      parent = p.id;
    } else if (typeof draft.parent === 'string') {
      if (!known.has(draft.parent))
        throw invalid(`draft ${i} names parent ${draft.parent}, which is not a compiled task of this lineage`);
      parent = draft.parent;
    }
    const content = await pinSettings(
      await pin(draft.content, ancestors(parent, known), opts.registry, i),
      opts.settings,
      i,
    );
    const body: Omit<Task, 'id'> = {
      role: draft.role,
      content,
      ...(parent ? { parent } : {}),
      ...(draft.state ? { state: draft.state } : {}),
    };
    const task: Task = { id: await taskId(body), ...body };
    checkPersistable(task);
    known.set(task.id, task);
    out.push(task);
  }
  return out;
}

/** Ancestors of `parent` (inclusive), nearest first. */
function ancestors(parent: string | undefined, known: Map<string, Task>): Task[] {
  const chain: Task[] = [];
  const seen = new Set<string>();
  for (let id = parent; id !== undefined; ) {
    if (seen.has(id)) throw invalid('the task chain has a cycle');
    seen.add(id);
    const t = known.get(id);
    if (!t) break;
    chain.push(t);
    id = t.parent;
  }
  return chain;
}

/** Pin a function call's settings revision (after its tool revision is pinned). */
async function pinSettings(
  content: TaskContent,
  settings: CompileOptions['settings'],
  i: number,
): Promise<TaskContent> {
  if (content.type !== 'functioncall' || !content.toolRevision) return content;
  if (!settings) return content;
  let rev: string | undefined;
  try {
    rev = await settings.pin(content.name, content.toolRevision, content.settingsRevision);
  } catch (e) {
    if (e instanceof TyError && e.code === 'E_UNKNOWN_TOOL')
      throw new TyError(
        'E_UNPINNED_TASK',
        `draft ${i}: the call to "${content.name}" names settings revision ${content.settingsRevision}: ${e.message}`,
      );
    throw e;
  }
  const { settingsRevision: _drop, ...rest } = content;
  return rev === undefined ? rest : { ...rest, settingsRevision: rev };
}

async function pin(
  content: TaskContent,
  chain: Task[],
  registry: CompileOptions['registry'],
  i: number,
): Promise<TaskContent> {
  if (content.type !== 'functioncall') return content;
  for (const t of chain) {
    const def = await definitionOf(t);
    if (def && def.name === content.name) {
      if (content.toolRevision && content.toolRevision !== def.revision) {
        throw new TyError(
          'E_UNPINNED_TASK',
          `draft ${i}: call to "${content.name}" names revision ${content.toolRevision}, but the definition in scope is ${def.revision}`,
        );
      }
      return { ...content, toolRevision: def.revision };
    }
  }
  if (!registry)
    throw new TyError(
      'E_UNPINNED_TASK',
      `draft ${i}: no definition of "${content.name}" is in scope and no registry was given`,
    );
  try {
    const ref = content.toolRevision ? `${content.name}@${content.toolRevision}` : content.name;
    const tool = await registry.resolve(ref);
    return { ...content, toolRevision: tool.revision };
  } catch (e) {
    if (e instanceof TyError && e.code === 'E_UNKNOWN_TOOL')
      throw new TyError('E_UNPINNED_TASK', `draft ${i}: the call to "${content.name}" cannot be pinned: ${e.message}`);
    throw e;
  }
}

/**
 * Refuse to persist a completed executable task without its pinned revision, or a task whose id does not match.
 * @throws TyError E_UNPINNED_TASK
 */
export function checkPersistable(task: Task): void {
  if (task.content.type === 'functioncall' && !task.content.toolRevision) {
    throw new TyError(
      'E_UNPINNED_TASK',
      `task ${task.id} is a ${task.state ?? 'draft'} function call without a toolRevision; it cannot be persisted`,
    );
  }
}

/** Persist a compiled task after re-checking its id and pinning. @throws TyError E_INTEGRITY, E_UNPINNED_TASK */
export async function persistTask(
  store: { putJson(ns: string, key: string, v: unknown): Promise<void> },
  task: Task,
): Promise<void> {
  const parsed = TaskSchema.safeParse(task);
  if (!parsed.success) throw invalid('not a compiled task');
  checkPersistable(parsed.data);
  if ((await taskId(parsed.data)) !== parsed.data.id)
    throw new TyError('E_INTEGRITY', `task ${parsed.data.id} does not match its content`);
  await store.putJson('tasks', parsed.data.id, parsed.data);
}

/**
 * The provider-facing signatures `{name, description, parameters}` of the tools visible at the end of
 * `lineage` (ordered root first): the nearest tooldefinition per name, then `registryTools` for names
 * no definition shadows.
 */
export async function visibleToolSignatures(
  lineage: Task[],
  opts: { registry?: Pick<ToolRegistry, 'resolve'>; registryTools?: ToolManifest[] } = {},
): Promise<ToolSignature[]> {
  const byName = new Map<string, ToolSignature>();
  const registryTools = opts.registryTools ?? [];
  for (let k = lineage.length - 1; k >= 0; k--) {
    const t = lineage[k]!;
    if (t.content.type !== 'tooldefinition') continue;
    const d = t.content.definition;
    const name = 'manifest' in d ? d.manifest.name : d.binding.name;
    if (byName.has(name)) continue;
    let m: ToolManifest | undefined;
    if ('manifest' in d) m = d.manifest;
    else if (opts.registry) m = (await opts.registry.resolve(`${d.binding.name}@${d.binding.toolRevision}`)).manifest;
    if (m) byName.set(name, { name, description: m.description, parameters: m.parameters });
  }
  for (const m of registryTools)
    if (!byName.has(m.name)) byName.set(m.name, { name: m.name, description: m.description, parameters: m.parameters });
  return [...byName.values()];
}

/** The tasks that become model messages: definition nodes stay out. */
export function modelMessages(lineage: Task[]): Task[] {
  return lineage.filter((t) => t.content.type !== 'tooldefinition');
}
