// The tycli command table: every command module registers here; Node host, trusted side.
import type { CliCommand } from '../types.js';
import { toolCommands } from './tool.js';
import { runCommands } from './run.js';
import { questionsCommands } from './questions.js';
import { answerCommands } from './answer.js';
import { askCommands } from './ask.js';
import { secretCommands } from './secret.js';
import { mcpCommands } from './mcp.js';
import { auditCommands } from './audit.js';
import { resumeCommands } from './resume.js';
import { permissionsCommands } from './permissions.js';
import { sandboxCommands } from './sandbox.js';
import { diagnosticsCommands } from './diagnostics.js';
import { appCommands } from './app.js';
import { serveCommands } from './serve.js';
import { completionCommand } from './completion.js';
import { settingsCommands } from './settings.js';

/** All commands, in --help order. Add one import line and one entry per module. */
export const commands: CliCommand[] = [
  ...toolCommands,
  ...runCommands,
  ...serveCommands,
  ...questionsCommands,
  ...answerCommands,
  ...askCommands,
  ...secretCommands,
  ...mcpCommands,
  ...auditCommands,
  ...resumeCommands,
  ...permissionsCommands,
  ...sandboxCommands,
  ...diagnosticsCommands,
  ...appCommands,
  ...settingsCommands,
  completionCommand(() => commands),
];
