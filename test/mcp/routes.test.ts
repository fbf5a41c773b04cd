// What a client sees through `mcp serve` in front of an SDK server, over stdio and HTTP: URIs rewritten everywhere,
// pages merged, completion, subscriptions, list_changed, logging, duplicates; test side.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { FIXTURE, ROOT, addNodeServer, connect, tempHome } from './helpers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { definitionsDir } from '../../node/mcp/definitions.js';
import { serveHttp } from '../../node/mcp/serve-http.js';

const SDK_FIXTURE = join(ROOT, 'test/mcp/peers/sdk-server.mjs');
let home: string;
let cleanup: () => Promise<void>;
let closeAll: (() => Promise<void>) | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await closeAll?.();
  closeAll = undefined;
  await cleanup();
});

type Opened = { client: Client; logs: string[] };
const transports: Record<string, (caps?: Record<string, unknown>) => Promise<Opened>> = {
  stdio: async () => {
    const c = await connect({ home, sandbox: 'r' }, {});
    closeAll = c.close;
    return { client: c.client, logs: c.logs };
  },
  http: async () => {
    const logs: string[] = [];
    const bridge = new McpBridge({ home, sandbox: 'r', log: (l) => logs.push(l) });
    const h = await serveHttp(bridge, { port: 0 });
    const client = new Client({ name: 'sdk', version: '1' }, { capabilities: {} });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(h.url), {
        requestInit: { headers: { authorization: `Bearer ${h.token}` } },
      }),
    );
    closeAll = async () => {
      await client.close().catch(() => undefined);
      await h.close();
      await bridge.close();
    };
    return { client, logs };
  },
};

async function until<T>(get: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('not seen in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each(Object.keys(transports))('mcp serve over %s in front of an SDK server', (via) => {
  const open = transports[via]!;

  it('every URI a client sees reads back through the bridge: lists, templates, resource links and embedded resources in tool and prompt results (pages merged)', async () => {
    await addNodeServer(home, 'sdk', SDK_FIXTURE, [], { ask: 'none', env: { FX_PAGES: '1' } });
    const { client } = await open();
    // every page of each list, the upstream paged one entry at a time
    const resources = (await client.listResources()).resources;
    expect(resources.map((r) => r.uri)).toEqual([
      'tymcp://sdk/test://static-text',
      'tymcp://sdk/test://static-binary',
      'tymcp://sdk/test://watched-resource',
    ]);
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual([
      'sdk__test_simple_prompt',
      'sdk__test_prompt_with_arguments',
      'sdk__test_prompt_with_embedded_resource',
      'sdk__test_prompt_with_image',
    ]);
    const templates = (await client.listResourceTemplates()).resourceTemplates;
    expect(templates.map((t) => t.uriTemplate)).toEqual([
      'tymcp://sdk/test://template/{id}/data',
      'tymcp://sdk/test://other/{name}',
    ]);
    expect((await client.listTools()).tools.length).toBeGreaterThan(10);
    // a template filled in by the client reads back and reaches the server
    const filled = templates[0]!.uriTemplate.replace('{id}', '42');
    const read = await client.readResource({ uri: filled });
    expect(read.contents[0]).toMatchObject({ uri: filled, text: expect.stringContaining('Data for ID: 42') });
    // resource links and embedded resources in a tool result carry bridged URIs, each readable
    const linked = (await client.callTool({ name: 'sdk__link', arguments: {} })).content as {
      type: string;
      uri?: string;
      resource?: { uri: string };
    }[];
    expect(linked[0]).toMatchObject({ type: 'resource_link', uri: 'tymcp://sdk/test://static-text' });
    expect(linked[1]?.resource?.uri).toBe('tymcp://sdk/test://template/7/data');
    expect((await client.readResource({ uri: linked[0]!.uri! })).contents[0]).toMatchObject({
      text: 'This is the content of the static text resource.',
    });
    expect((await client.readResource({ uri: linked[1]!.resource!.uri })).contents[0]).toMatchObject({
      text: expect.stringContaining('Data for ID: 7'),
    });
    // embedded resources in a prompt result too
    const prompt = await client.getPrompt({
      name: 'sdk__test_prompt_with_embedded_resource',
      arguments: { resourceUri: 'test://static-text' },
    });
    expect((prompt.messages[0]!.content as { resource: { uri: string } }).resource.uri).toBe(
      'tymcp://sdk/test://static-text',
    );
  }, 30_000);

  it('completion/complete is routed by the prompt or template reference; subscriptions reach the owning server and updates come back bridged', async () => {
    await addNodeServer(home, 'sdk', SDK_FIXTURE, [], { ask: 'none' });
    const { client } = await open();
    expect(client.getServerCapabilities()?.completions).toEqual({});
    expect(client.getServerCapabilities()?.resources?.subscribe).toBe(true);
    const byPrompt = await client.complete({
      ref: { type: 'ref/prompt', name: 'sdk__test_prompt_with_arguments' },
      argument: { name: 'arg1', value: 'al' },
    });
    expect(byPrompt.completion.values).toEqual(['alpha']);
    const byTemplate = await client.complete({
      ref: { type: 'ref/resource', uri: 'tymcp://sdk/test://template/{id}/data' },
      argument: { name: 'id', value: '' },
    });
    expect(byTemplate.completion.values).toEqual(['1', '2', '42']);
    const updates: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
    await client.subscribeResource({ uri: 'tymcp://sdk/test://watched-resource' });
    expect(await until(() => updates[0])).toBe('tymcp://sdk/test://watched-resource');
    await client.unsubscribeResource({ uri: 'tymcp://sdk/test://watched-resource' });
  }, 30_000);

  it('logging/setLevel reaches the server, its log messages keep their logger; a server added, removed or defined again mid-session sends the three list_changed notifications', async () => {
    await addNodeServer(home, 'sdk', SDK_FIXTURE, [], { ask: 'none' });
    const { client } = await open();
    const messages: { logger?: string; data: unknown }[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void messages.push(n.params));
    let changed = 0;
    let prompts = 0;
    let resources = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => void prompts++);
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void resources++);
    await client.listTools();
    await client.setLoggingLevel('warning');
    expect(JSON.stringify(await client.callTool({ name: 'sdk__set_level_seen', arguments: {} }))).toContain('warning');
    const set = await until(() => messages.find((m) => String(m.data).includes('Log level set to: warning')));
    expect(set.logger).toBe('sdk/conformance-test-server');
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    await until(() => (changed > 0 ? changed : undefined));
    expect((await client.listTools()).tools.some((t) => t.name === 'fx__search')).toBe(true);
    const before = changed;
    await rm(join(definitionsDir(home), 'fx.json'));
    await until(() => (changed > before ? changed : undefined));
    expect((await client.listTools()).tools.some((t) => t.name.startsWith('fx__'))).toBe(false);
    expect(prompts).toBeGreaterThan(0);
    expect(resources).toBeGreaterThan(0);
    // defined again (another environment): its lists may differ, so the client is told too
    const again = changed;
    await addNodeServer(home, 'sdk', SDK_FIXTURE, [], { ask: 'none', env: { FX_DUP: '1' } });
    await until(() => (changed > again ? changed : undefined));
    // the first listing ends the older session (E_MCP_REDEFINED); the next one sees the new definition
    await client.listTools();
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('sdk__test_image_content');
    expect(names).not.toContain('sdk__test_simple_text');
  }, 30_000);

  it("arguments a tool's schema refuses and a tool that reports an error are CallToolResults with isError, not JSON-RPC errors", async () => {
    await addNodeServer(home, 'sdk', SDK_FIXTURE, [], { ask: 'none' });
    const { client } = await open();
    const bad = (await client.callTool({ name: 'sdk__json_schema_2020_12_tool', arguments: { nope: 1 } })) as {
      isError?: boolean;
      content: { text: string }[];
      _meta?: Record<string, unknown>;
    };
    expect([bad.isError, bad._meta?.['tysandbox/code']]).toEqual([true, 'E_INVALID_ARGS']);
    expect(bad.content[0]?.text).toContain('"nope"');
    const failed = (await client.callTool({ name: 'sdk__test_error_handling', arguments: {} })) as {
      isError?: boolean;
    };
    expect(failed.isError).toBe(true);
    await expect(client.callTool({ name: 'sdk__no_such_tool', arguments: {} })).rejects.toThrow(/no tool/);
  }, 30_000);

  it('a tool name listed twice by one server: neither is offered, a warning is logged once, a call is refused', async () => {
    await addNodeServer(home, 'sdk', SDK_FIXTURE, [], { ask: 'none', env: { FX_DUP: '1' } });
    const { client, logs } = await open();
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('sdk__test_simple_text');
    expect(names).toContain('sdk__test_image_content');
    await client.listTools();
    const warned = logs.filter((l) => l.includes('"name":"test_simple_text"') && l.includes('more than once'));
    expect(warned.length).toBeGreaterThanOrEqual(1);
    await expect(client.callTool({ name: 'sdk__test_simple_text', arguments: {} })).rejects.toThrow(/more than once/);
  }, 30_000);
});
