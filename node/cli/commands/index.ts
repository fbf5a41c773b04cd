// The tycli command table: every command module registers here; Node host, trusted side.
// Modules by concept: tool/ (revisions, lifecycle, settings, run), mcp/ (servers, serve and proxy), ask/ (status,
// questions, answer), policy/ (permissions, resume, secrets, tokens, settings, audit), serve/ (the protocol server,
// the web app), system/ (sandbox status, store, diagnostics, completion).
import type { CliCommand } from '../types.js';
import { toolCommands } from './tool/revisions.js';
import { runCommands } from './tool/run.js';
import { mcpCommands } from './mcp/servers.js';
import { askCommands } from './ask/status.js';
import { questionsCommands } from './ask/questions.js';
import { answerCommands } from './ask/answer.js';
import { auditCommands } from './policy/audit.js';
import { permissionsCommands } from './policy/permissions.js';
import { resumeCommands } from './policy/resume.js';
import { secretCommands } from './policy/secret.js';
import { tokenCommands } from './policy/token.js';
import { settingsCommands } from './policy/settings.js';
import { appCommands } from './serve/app.js';
import { serveCommands } from './serve/serve.js';
import { completionCommand } from './system/completion.js';
import { diagnosticsCommands } from './system/diagnostics.js';
import { sandboxCommands } from './system/sandbox.js';
import { storeCommands } from './system/store.js';

/** All commands, in --help order. Add one import line and one entry per module. */
export const commands: CliCommand[] = [
  ...toolCommands,
  ...runCommands,
  ...serveCommands,
  ...questionsCommands,
  ...answerCommands,
  ...askCommands,
  ...secretCommands,
  ...tokenCommands,
  ...mcpCommands,
  ...auditCommands,
  ...resumeCommands,
  ...permissionsCommands,
  ...sandboxCommands,
  ...storeCommands,
  ...diagnosticsCommands,
  ...appCommands,
  ...settingsCommands,
  completionCommand(() => commands),
];
