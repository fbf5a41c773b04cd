// Manifest validation at install time (zod schema, name rule, JSON Schemas); core, trusted side.
// Kept apart from core/revisions/registry.ts so that calling a tool never loads the schema library (install and task
// compile do).
import {
  TOOL_NAME_START_RE,
  TOOL_NAME_START_RULE,
  ToolManifestSchema,
  type ToolManifest,
} from '../../protocol/manifest.js';
import { TyError } from '../errors.js';
import { checkSchema } from '../schema/validate.js';
import { checkSettingsSchema } from '../revisions/settings.js';
import { quoteText } from '../ask/text.js';

/**
 * Validate a manifest: schema (protocol/manifest.ts), the name's first character (TOOL_NAME_START_RE) and its JSON
 * Schemas (core/schema/validate.ts, strict draft 2020-12). Every install goes through it (browser, command line,
 * protocol).
 * @throws TyError E_INVALID_MANIFEST naming the field and the fix.
 */
export function parseManifest(input: unknown): ToolManifest {
  const r = ToolManifestSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0];
    const at = issue?.path.length ? issue.path.join('.') : '(root)';
    const name =
      at === 'name' && typeof input === 'object' && input !== null ? (input as { name?: unknown }).name : undefined;
    const given = typeof name === 'string' ? ` (got ${quoteText(name)})` : '';
    throw new TyError('E_INVALID_MANIFEST', `invalid manifest at ${at}: ${issue?.message ?? 'invalid'}${given}`, {
      path: at,
    });
  }
  if (!TOOL_NAME_START_RE.test(r.data.name)) {
    throw new TyError('E_INVALID_MANIFEST', `invalid manifest at name: "${r.data.name}": ${TOOL_NAME_START_RULE}`, {
      path: 'name',
    });
  }
  const exec = r.data.execution;
  if (exec.kind === 'sandboxed-code' && exec.engine === 'quickjs') {
    if (exec.runtime !== 'javascript')
      throw new TyError(
        'E_INVALID_MANIFEST',
        'invalid manifest at execution.engine: the quickjs engine runs JavaScript only (Python runs on the node or deno engine)',
        { path: 'execution.engine' },
      );
    if ((r.data.capabilities?.folders?.length ?? 0) > 0)
      throw new TyError(
        'E_INVALID_MANIFEST',
        'invalid manifest at capabilities.folders: the quickjs engine has no file system; folder grants need the node or deno engine',
        { path: 'capabilities.folders' },
      );
  }
  checkSchema(r.data.parameters, 'parameters');
  if (r.data.outputSchema) checkSchema(r.data.outputSchema, 'outputSchema');
  if (r.data.settings) checkSettingsSchema(r.data.settings);
  return r.data;
}
