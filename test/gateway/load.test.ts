// Admission before exhaustion, for real: 10,000 concurrent tool/run requests to one `tycli serve --http` instance
// running under `ulimit -n 1024` all get answers (a result, E_BUSY or HTTP 429), none a reset connection; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { rmSync } from 'node:fs';
import { connectHttp } from '../../node/client.js';
import { machine, startInstance, tool, tycli, type Instance } from './harness.js';

let home = '';
let instance: Instance;
let token = '';
const plain = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home });

beforeAll(async () => {
  home = machine({ permissions: { allow: ['registry(*)', 'tool(*)'] } });
  const t = await tycli(home, ['--json', 'token', 'create', '--principal', 'load'], plain());
  token = JSON.parse(t.stdout.trim()).token as string;
  instance = await startInstance(home, ['serve', '--http', '127.0.0.1:0'], plain(), { nofile: 1024 });
  const c = await connectHttp(instance.url, token, { name: 'setup' });
  await c.tool.add(tool('echo', 'return { n: a.n };', { n: { type: 'integer' } }));
  await c.close();
}, 120_000);
afterAll(async () => {
  await instance?.stop();
  if (home) rmSync(home, { recursive: true, force: true });
}, 60_000);

describe('admission under a descriptor limit', () => {
  it('10,000 concurrent requests under ulimit -n 1024: every one answered (ok, E_BUSY or 429), 0 connection resets', async () => {
    // one session; every request a connection of its own (no keep-alive), all at once
    const init = await fetch(instance.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: 'tysandbox/1', client: { name: 'load', version: '1' } },
      }),
    });
    await init.text();
    const session = init.headers.get('tysandbox-session')!;
    expect(session).toBeTruthy();
    const outcomes: Record<string, number> = {};
    const count = (k: string) => void (outcomes[k] = (outcomes[k] ?? 0) + 1);
    const N = 10_000;
    await Promise.all(
      Array.from(
        { length: N },
        (_, n) =>
          new Promise<void>((resolve) => {
            const body = JSON.stringify({
              jsonrpc: '2.0',
              id: n + 1,
              method: 'tool/run',
              params: { ref: 'echo', arguments: { n } },
            });
            const req = request(
              instance.url,
              {
                method: 'POST',
                agent: false,
                headers: {
                  authorization: `Bearer ${token}`,
                  'content-type': 'application/json',
                  'tysandbox-session': session,
                },
              },
              (res) => {
                let text = '';
                res.on('data', (d) => (text += String(d)));
                res.on('end', () => {
                  if (res.statusCode === 429) count('429');
                  else {
                    const last = JSON.parse(text.trim().split('\n').pop() ?? '{}') as {
                      result?: { result?: { n?: number } };
                      error?: { data?: { code?: string } };
                    };
                    if (last.result?.result?.n === n) count('ok');
                    else count(`${res.statusCode} ${last.error?.data?.code ?? 'unknown'}`);
                  }
                  resolve();
                });
                res.on('error', (e) => {
                  count(`response ${(e as { code?: string }).code ?? e.message}`);
                  resolve();
                });
              },
            );
            req.on('error', (e) => {
              count(`request ${(e as { code?: string }).code ?? e.message}`);
              resolve();
            });
            req.end(body);
          }),
      ),
    );
    const answered = (outcomes.ok ?? 0) + (outcomes['429'] ?? 0) + (outcomes['200 E_BUSY'] ?? 0);
    expect(outcomes, JSON.stringify(outcomes)).not.toHaveProperty(['request ECONNRESET']);
    expect(answered, JSON.stringify(outcomes)).toBe(N);
    expect(outcomes.ok ?? 0).toBeGreaterThan(0);
    // the instance is still serving
    const r = await fetch(`${instance.base}/healthz`);
    expect(r.status).toBe(200);
  }, 600_000);
});
