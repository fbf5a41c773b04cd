// Unit tests: task paths become chat messages (calls grouped, results answering their call ids, failed calls); test
// code.
import { describe, expect, it } from 'vitest';
import { compileDrafts } from '../../../core/revisions/tasks.js';
import { ToolRegistry } from '../../../core/revisions/registry.js';
import { Store } from '../../../core/store/contract.js';
import { MemoryStoreBackend } from '../../../core/store/memory.js';
import { callIdOf, toChatMessages } from './convert.js';

describe('toChatMessages', () => {
  it('groups an assistant message with its calls, answers each call id, turns a failed call into a call plus an error, and leaves definitions out', async () => {
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    await registry.install({
      name: 'add',
      description: 'adds',
      parameters: { type: 'object', properties: { a: { type: 'number' } } },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async ({a}) => a;' },
    });
    const tasks = await compileDrafts(
      [
        { role: 'system', content: { type: 'message', text: 'sys' } },
        { role: 'user', parent: 0, content: { type: 'message', text: 'hi' } },
        { role: 'assistant', parent: 1, content: { type: 'message', text: 'calling' } },
        { role: 'assistant', parent: 2, content: { type: 'functioncall', name: 'add', arguments: { a: 1 } } },
        {
          role: 'assistant',
          parent: 3,
          content: {
            type: 'error',
            error: {
              code: 'E_UNKNOWN_TOOL',
              message: 'no such tool',
              data: { call: { name: 'nope', arguments: '{}' } },
            },
          },
        },
      ],
      { registry },
    );
    // Point the result at the call (its id is known only after compiling).
    const [withResult] = await compileDrafts(
      [
        {
          role: 'function',
          parent: tasks[4]!.id,
          state: 'completed',
          content: { type: 'toolresult', callTask: tasks[3]!.id, result: { ok: true, value: 1 } },
        },
      ],
      { registry, lineage: tasks },
    );
    const path = [...tasks, withResult!];
    const msgs = toChatMessages(path);
    expect(msgs).toEqual([
      { role: 'system', text: 'sys' },
      { role: 'user', text: 'hi' },
      {
        role: 'assistant',
        text: 'calling',
        toolCalls: [
          { id: callIdOf(tasks[3]!.id), name: 'add', arguments: '{"a":1}' },
          { id: callIdOf(tasks[4]!.id), name: 'nope', arguments: '{}' },
        ],
      },
      {
        role: 'tool',
        callId: callIdOf(tasks[4]!.id),
        name: 'nope',
        content: '{"error":{"code":"E_UNKNOWN_TOOL","message":"no such tool"}}',
        isError: true,
      },
      { role: 'tool', callId: callIdOf(tasks[3]!.id), name: 'add', content: '1', isError: false },
    ]);
  });
});
