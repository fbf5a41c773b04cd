// The app database's key binding and a turn's journal put back into the tree after a reload (fake-indexeddb, the
// memory store): partial text marked interrupted, calls given their kept outcome or E_INTERRUPTED; test code.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../../../core/revisions/registry.js';
import { Store } from '../../../core/store/contract.js';
import { MemoryStoreBackend } from '../../../core/store/memory.js';
import { AppDb } from '../app-db.js';
import { toChatMessages } from './convert.js';
import { TurnJournal } from './journal.js';
import { recoverTurn, unansweredCalls } from './recover.js';
import { ConversationTree } from './tree.js';
import { unansweredToolCall } from './turn.js';

let n = 0;
const db = () => AppDb.open(`tysandbox-app-test-${++n}`);

const tool = {
  name: 'echo',
  description: 'Echoes.',
  parameters: { type: 'object', properties: { x: { type: 'number' } }, additionalProperties: false },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async (a) => a;' },
};

describe('AppDb keys', () => {
  it("binds a connection's key and headers to the origin they were saved for; a new key is for its origin only", async () => {
    const d = await db();
    await d.putKey('c1', 'sk-new', 'https://api.openai.com');
    expect(await d.getCredentials('c1')).toEqual({ key: 'sk-new', origins: ['https://api.openai.com'], headers: [] });
    await d.confirmKeyOrigin('c1', 'http://127.0.0.1:11434');
    await d.confirmKeyOrigin('c1', 'http://127.0.0.1:11434');
    expect((await d.getCredentials('c1'))?.origins).toEqual(['https://api.openai.com', 'http://127.0.0.1:11434']);
    // another connection's key is its own
    expect(await d.getCredentials('c2')).toBeUndefined();
    await d.putKey('c2', 'sk-two', 'https://api.anthropic.com');
    expect((await d.getCredentials('c1'))?.key).toBe('sk-new');
    // a header saved for another origin than the key's confirms only that origin
    await d.putHeaders('c1', [{ name: 'X-Title', value: 'v' }], 'https://openrouter.ai');
    expect(await d.getCredentials('c1')).toEqual({
      key: 'sk-new',
      origins: ['https://openrouter.ai'],
      headers: [{ name: 'X-Title', value: 'v' }],
    });
    await d.putKey('c1', 'sk-other', undefined);
    expect((await d.getCredentials('c1'))?.origins).toEqual([]);
    await d.putHeaders('c1', [], undefined);
    await d.putKey('c1', '', undefined);
    expect(await d.getCredentials('c1')).toBeUndefined();
    await d.deleteConnection('c2');
    expect(await d.getCredentials('c2')).toBeUndefined();
  });

  it('keeps the single key of before (a bare string: confirmed for no origin) until it is moved', async () => {
    const d = await db();
    await d.db.put('keys', 'sk-legacy', 'apiKey');
    expect(await d.legacyKey()).toEqual({ key: 'sk-legacy', origins: [] });
    await d.db.put('keys', { key: 'sk-bound', origins: ['https://api.openai.com'] }, 'apiKey');
    expect(await d.legacyKey()).toEqual({ key: 'sk-bound', origins: ['https://api.openai.com'] });
    await d.deleteLegacyKey();
    expect(await d.legacyKey()).toBeUndefined();
  });
});

describe('recoverTurn', () => {
  async function setup() {
    const d = await db();
    const store = new Store(new MemoryStoreBackend());
    const registry = new ToolRegistry(store);
    await registry.install(tool);
    const tree = await ConversationTree.create(store, d);
    await tree.append(tree.record.leaf, [{ role: 'user', content: { type: 'message', text: 'hi' } }], registry);
    return { d, tree, registry };
  }

  it('keeps the text streamed before the page went away as an answer marked interrupted', async () => {
    const { d, tree, registry } = await setup();
    const j = new TurnJournal(d, tree.record.id, tree.record.leaf);
    await j.begin(tree.record.leaf);
    j.text('The first half');
    await j.flush();
    expect(await recoverTurn(tree, d, registry)).toBe(true);
    const last = (await tree.path()).at(-1)!;
    expect(last.content).toEqual({ type: 'message', text: 'The first half' });
    expect(tree.record.interrupted).toEqual([last.id]);
    expect(await d.getTurn(tree.record.id)).toBeUndefined();
    // nothing kept twice
    expect(await recoverTurn(tree, d, registry)).toBe(false);
  });

  it('gives every call without a result its kept outcome or E_INTERRUPTED, in call order, so the history is valid', async () => {
    const { d, tree, registry } = await setup();
    await tree.append(tree.record.leaf, [{ role: 'assistant', content: { type: 'message', text: '' } }], registry);
    const calls = [];
    for (const x of [1, 2])
      calls.push(
        ...(await tree.append(
          tree.record.leaf,
          [{ role: 'assistant', content: { type: 'functioncall', name: 'echo', arguments: { x } } }],
          registry,
        )),
      );
    const j = new TurnJournal(d, tree.record.id, tree.record.leaf);
    await j.call(calls[0]!.id, { ok: true, value: { x: 1 }, ms: 5 });
    expect(unansweredToolCall(toChatMessages(await tree.path()))).toBeDefined();
    expect(await recoverTurn(tree, d, registry)).toBe(true);
    const path = await tree.path();
    expect(unansweredCalls(path)).toEqual([]);
    expect(unansweredToolCall(toChatMessages(path))).toBeUndefined();
    const results = path.filter((t) => t.content.type === 'toolresult').map((t) => t.content);
    expect(results).toMatchObject([
      { callTask: calls[0]!.id, result: { ok: true, value: { x: 1 } } },
      { callTask: calls[1]!.id, result: { ok: false, error: { code: 'E_INTERRUPTED' } } },
    ]);
  });
});
