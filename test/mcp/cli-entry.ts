// Runs tycli from source for MCP tests (node --import tsx test/mcp/cli-entry.ts ARGS...); test side.
import { main } from '../../node/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
