// An MCP server on the 2.x SDK (McpServer over stdio) whose tool `step` does what its argument says: ok (answers with
// the process id), crash (the process exits 3), freeze (never answers, cancelled or not); test peer, untrusted side.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

serveStdio(() => {
  const server = new McpServer({ name: 'steps-fixture', version: '1.0.0' });
  server.registerTool(
    'step',
    { description: 'one scripted step', inputSchema: z.object({ do: z.enum(['ok', 'crash', 'freeze']) }) },
    async ({ do: what }) => {
      if (what === 'crash') process.exit(3);
      if (what === 'freeze') await new Promise(() => undefined);
      return { content: [{ type: 'text', text: `ok ${process.pid}` }] };
    },
  );
  return server;
});
