// Runs tycli from source for MCP tests (node --import tsx test/mcp/cli-entry.ts ARGS...), owning the process's signals
// as bin/tycli.mjs does (SIGTERM stops a serving command: exit 143); test side.
import { main } from '../../node/cli/main.js';

process.exitCode = await main(process.argv.slice(2), { signals: true });
