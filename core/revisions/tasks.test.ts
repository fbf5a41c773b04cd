// Unit tests for task compilation: pinning, lexical scope of definitions, hashing, persistence checks.
import { describe, expect, it } from 'vitest';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { ToolRegistry, revisionId } from './registry.js';
import { compileDrafts, modelMessages, persistTask, taskId, visibleToolSignatures } from './tasks.js';
import { TyError } from '../errors.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { Task } from '../../protocol/task.js';

const m = (name: string, source: string): ToolManifest => ({
  name,
  description: `${name} tool`,
  parameters: { type: 'object', properties: {}, additionalProperties: true },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
});
const code = (e: unknown) => (e instanceof TyError ? e.code : String(e));

describe('compileDrafts', () => {
  it('pins a call to the registry binding and hashes after pinning; the pin survives a later activation', async () => {
    const store = new Store(new MemoryStoreBackend());
    const registry = new ToolRegistry(store);
    const v1 = await registry.install(m('echo', 'export default async (a) => a;'));
    const [user, call] = await compileDrafts(
      [
        { role: 'user', content: { type: 'message', text: 'hi' } },
        { role: 'assistant', parent: 0, content: { type: 'functioncall', name: 'echo', arguments: { a: 1 } } },
      ],
      { registry },
    );
    expect(call!.parent).toBe(user!.id);
    expect(call!.content).toMatchObject({ toolRevision: v1.revision });
    const v2 = await registry.install(m('echo', 'export default async (a) => [a];'));
    await registry.activate('echo', v2.revision, { approveReplacement: true });
    expect(call!.content).toMatchObject({ toolRevision: v1.revision });
    expect(call!.id).toBe(await taskId(call!));
  });

  it('prefers the nearest tooldefinition among ancestors, never installs it, and scopes it to descendants', async () => {
    const store = new Store(new MemoryStoreBackend());
    const registry = new ToolRegistry(store);
    const reg = await registry.install(m('calc', 'export default async () => "registry";'));
    const inline = m('calc', 'export default async () => "inline";');
    const tasks = await compileDrafts(
      [
        { role: 'system', content: { type: 'message', text: 'root' } },
        { role: 'system', parent: 0, content: { type: 'tooldefinition', definition: { manifest: inline } } },
        { role: 'assistant', parent: 1, content: { type: 'functioncall', name: 'calc', arguments: {} } },
        // sibling branch: the definition is not in its ancestry
        { role: 'assistant', parent: 0, content: { type: 'functioncall', name: 'calc', arguments: {} } },
      ],
      { registry },
    );
    expect(tasks[2]!.content).toMatchObject({ toolRevision: await revisionId(inline) });
    expect(tasks[3]!.content).toMatchObject({ toolRevision: reg.revision });
    expect((await registry.list()).find((t) => t.name === 'calc')!.revisions).toEqual([reg.revision]);
  });

  it('refuses an unresolvable call, a forward parent, an unknown parent and mixed hashed/unhashed chains', async () => {
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    const call = { role: 'assistant', content: { type: 'functioncall', name: 'ghost', arguments: {} } };
    expect(code(await compileDrafts([call], { registry }).catch((e) => e))).toBe('E_UNPINNED_TASK');
    expect(code(await compileDrafts([call]).catch((e) => e))).toBe('E_UNPINNED_TASK');
    const msg = { role: 'user', content: { type: 'message', text: 'x' } };
    expect(code(await compileDrafts([{ ...msg, parent: 1 }, msg]).catch((e) => e))).toBe('E_INVALID_TASK');
    expect(
      code(
        await compileDrafts([{ ...msg, parent: 'bagaaieraxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' }]).catch(
          (e) => e,
        ),
      ),
    ).toBe('E_INVALID_TASK');
    const [done] = await compileDrafts([msg]);
    expect(code(await compileDrafts([{ ...msg, id: done!.id }]).catch((e) => e))).toBe('E_INVALID_TASK');
    const unhashed = { ...done!, id: 'not-a-cid' } as Task;
    expect(code(await compileDrafts([msg], { lineage: [unhashed] }).catch((e) => e))).toBe('E_INVALID_TASK');
    const forged = { ...done!, content: { type: 'message', text: 'changed' } } as Task;
    expect(code(await compileDrafts([msg], { lineage: [forged] }).catch((e) => e))).toBe('E_INTEGRITY');
  });

  it('refuses a call pinned to a revision that disagrees with the definition in scope', async () => {
    const inline = m('calc', 'export default async () => 1;');
    const other = await revisionId(m('calc', 'export default async () => 2;'));
    const err = await compileDrafts([
      { role: 'system', content: { type: 'tooldefinition', definition: { manifest: inline } } },
      {
        role: 'assistant',
        parent: 0,
        content: { type: 'functioncall', name: 'calc', arguments: {}, toolRevision: other },
      },
    ]).catch((e) => e);
    expect(code(err)).toBe('E_UNPINNED_TASK');
  });
});

describe('persistence and signatures', () => {
  it('refuses a completed function call without toolRevision, and a task whose id does not match', async () => {
    const store = new Store(new MemoryStoreBackend());
    const content = { type: 'functioncall' as const, name: 'echo', arguments: {} };
    const unpinned: Task = {
      id: await taskId({ role: 'assistant', content, state: 'completed' }),
      role: 'assistant',
      content,
      state: 'completed',
    };
    expect(code(await persistTask(store, unpinned).catch((e) => e))).toBe('E_UNPINNED_TASK');
    const [ok] = await compileDrafts([{ role: 'user', content: { type: 'message', text: 'x' } }]);
    await persistTask(store, ok!);
    expect(await store.getJson('tasks', ok!.id)).toEqual(ok);
    expect(code(await persistTask(store, { ...ok!, content: { type: 'message', text: 'y' } }).catch((e) => e))).toBe(
      'E_INTEGRITY',
    );
  });

  it('compiles provider signatures from the lineage and keeps definition nodes out of model messages', async () => {
    const tasks = await compileDrafts([
      {
        role: 'system',
        content: { type: 'tooldefinition', definition: { manifest: m('calc', 'export default async () => 1;') } },
      },
      { role: 'user', parent: 0, content: { type: 'message', text: 'go' } },
    ]);
    const sigs = await visibleToolSignatures(tasks, { registryTools: [m('calc', 'x'), m('other', 'y')] });
    expect(sigs).toEqual([
      {
        name: 'calc',
        description: 'calc tool',
        parameters: { type: 'object', properties: {}, additionalProperties: true },
      },
      {
        name: 'other',
        description: 'other tool',
        parameters: { type: 'object', properties: {}, additionalProperties: true },
      },
    ]);
    expect(modelMessages(tasks).map((t) => t.content.type)).toEqual(['message']);
  });
});
