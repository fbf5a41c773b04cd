// The settings file's zod schema and its parse with field-naming errors; Node host, trusted side.
// Loaded by node/settings/load.ts when a settings file exists, so a run without one never loads zod for it.
import { z } from 'zod';
import { TyError } from '../../core/errors.js';
import { MAX_ASK_WAIT_MS } from '../../core/ask/router.js';
import { PERMISSION_MODES, parseMatcher, parseRule } from '../../core/policy/permissions.js';
import { DEFAULT_HOOK_TIMEOUT_MS, MAX_HOOK_TIMEOUT_MS } from './limits.js';

const checked = (fn: (s: string) => unknown) => (s: string, ctx: z.RefinementCtx) => {
  try {
    fn(s);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message : String(e) });
  }
};

const RuleString = z.string().max(2048).superRefine(checked(parseRule));
const RuleList = z.array(RuleString).max(1000);

const HookSchema = z.strictObject({
  /** `*`, a tool-name glob, or a rule (core/policy/permissions.ts parseMatcher); default `*`. */
  matcher: z.string().max(2048).superRefine(checked(parseMatcher)).default('*'),
  /** A shell command line, run with /bin/sh -c. */
  command: z.string().min(1).max(8192),
  /** ms, 1..600 000, default 60 000 */
  timeoutMs: z.number().int().min(1).max(MAX_HOOK_TIMEOUT_MS).default(DEFAULT_HOOK_TIMEOUT_MS),
});

/**
 * A settings file. Every key is optional; unknown keys are refused.
 * - `permissions`: `{mode, allow, deny, ask, alwaysAsk}` (core/policy/permissions.ts rule grammar)
 * - `hooks`: `{preToolUse, postToolUse, permissionRequest}`: lists of `{matcher, command, timeoutMs}`
 * - `ask_wait`: ms a question waits for an answer (default 120 000, at most 86 400 000)
 * - `session_idle`: ms an MCP client session over HTTP may go without a request before it ends (default 300 000)
 * - `ask`: `{dialog}`: the desktop dialog channel `auto` (default: used when a desktop session is there) | `off`
 * - `sandbox`: OS isolation posture `auto` | `required` | `off`
 * - `runtime`: default JavaScript runtime `node` | `deno`
 * - `pause`: `{maxRefusals, windowMs}`: refusals within the window (ms) that pause a tool (default 10 in 60 000)
 * - `store`: `{url}`: the PostgreSQL store (`postgres://...`, docs/deploy.md); user settings only (TYCLI_STORE wins)
 * - `gateway`: `{oidc}`: OIDC access tokens for `serve --http` and `mcp serve --http` (node/gateway/oidc.ts
 *   OidcConfig); user settings only
 */
export const SettingsSchema = z.strictObject({
  permissions: z
    .strictObject({
      mode: z.enum(PERMISSION_MODES).optional(),
      allow: RuleList.optional(),
      deny: RuleList.optional(),
      ask: RuleList.optional(),
      alwaysAsk: RuleList.optional(),
    })
    .optional(),
  hooks: z
    .strictObject({
      preToolUse: z.array(HookSchema).max(64).optional(),
      postToolUse: z.array(HookSchema).max(64).optional(),
      permissionRequest: z.array(HookSchema).max(64).optional(),
    })
    .optional(),
  ask_wait: z.number().int().min(1).max(MAX_ASK_WAIT_MS).optional(),
  session_idle: z.number().int().min(1000).max(86_400_000).optional(),
  ask: z.strictObject({ dialog: z.enum(['auto', 'off']).optional() }).optional(),
  sandbox: z.enum(['auto', 'required', 'off']).optional(),
  runtime: z.enum(['node', 'deno']).optional(),
  pause: z
    .strictObject({
      maxRefusals: z.number().int().min(1).max(10_000).optional(),
      windowMs: z.number().int().min(1000).max(86_400_000).optional(),
    })
    .optional(),
  store: z
    .strictObject({
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\//i, 'a postgres:// URL')
        .max(4096),
    })
    .optional(),
  gateway: z
    .strictObject({
      oidc: z
        .strictObject({
          issuer: z.string().url().max(2048),
          audience: z.string().min(1).max(2048),
          claim: z
            .string()
            .regex(/^[A-Za-z0-9_.:-]{1,64}$/)
            .optional(),
          jwksUri: z.string().url().max(2048).optional(),
          algorithms: z
            .array(z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384', 'EdDSA']))
            .min(1)
            .optional(),
          scopes: z.array(z.string().min(1).max(256)).max(64).optional(),
        })
        .optional(),
    })
    .optional(),
});
export type Settings = z.infer<typeof SettingsSchema>;

function fieldOf(path: readonly PropertyKey[], extra?: string): string {
  let out = '';
  for (const p of [...path, ...(extra !== undefined ? [extra] : [])]) {
    out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`;
  }
  return out || '(top level)';
}

/**
 * Validate parsed settings JSON. @throws TyError E_INVALID_SETTINGS naming `file` and the field(s),
 * with `data: {file, field}` for the first.
 */
export function parseSettings(value: unknown, file: string): Settings {
  const r = SettingsSchema.safeParse(value);
  if (r.success) return r.data;
  const parts: string[] = [];
  let first: string | undefined;
  for (const issue of r.error.issues.slice(0, 5)) {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
    for (const k of keys) {
      const field = fieldOf(issue.path, k);
      first ??= field;
      parts.push(issue.code === 'unrecognized_keys' ? `${field}: unknown key` : `${field}: ${issue.message}`);
    }
  }
  throw new TyError('E_INVALID_SETTINGS', `invalid settings file ${file}: ${parts.join('; ')}`, {
    file,
    field: first ?? '(top level)',
  });
}
