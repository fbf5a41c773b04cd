// node/settings/schema.ts SettingsSchema mirrored without zod, for the settings files read on every command; Node host,
// trusted side.
// node/settings/check.test.ts holds it to the schema: whatever it accepts, the schema accepts with the same output
// (defaults filled in); anything else goes to the schema, which gives the verdict and its message.
import { MAX_ASK_WAIT_MS } from '../../core/ask/router.js';
import { PERMISSION_MODES, parseMatcher, parseRule } from '../../core/policy/permissions.js';
import {
  NO,
  arr,
  num,
  oneOf,
  opt,
  refine,
  req,
  str,
  strictObject,
  withDefault,
  type Parse,
} from '../../core/schema/hand.js';
import type { Settings } from './schema.js';
import { DEFAULT_HOOK_TIMEOUT_MS, MAX_HOOK_TIMEOUT_MS } from './limits.js';

const rules = opt(arr(refine(str({ max: 2048 }), parseRule), { max: 1000 }));
const hooks = opt(
  arr(
    strictObject({
      matcher: withDefault(refine(str({ max: 2048 }), parseMatcher), '*'),
      command: req(str({ min: 1, max: 8192 })),
      timeoutMs: withDefault(num({ int: true, min: 1, max: MAX_HOOK_TIMEOUT_MS }), DEFAULT_HOOK_TIMEOUT_MS),
    }),
    { max: 64 },
  ),
);

/** SettingsSchema's parse for plain JSON data: the settings zod would return, or NO when this cannot vouch for them. */
export const plainSettingsParse: Parse<Settings> = strictObject<Settings>({
  permissions: opt(
    strictObject({ mode: opt(oneOf(PERMISSION_MODES)), allow: rules, deny: rules, ask: rules, alwaysAsk: rules }),
  ),
  hooks: opt(strictObject({ preToolUse: hooks, postToolUse: hooks, permissionRequest: hooks })),
  ask_wait: opt(num({ int: true, min: 1, max: MAX_ASK_WAIT_MS })),
  session_idle: opt(num({ int: true, min: 1000, max: 86_400_000 })),
  ask: opt(strictObject({ dialog: opt(oneOf(['auto', 'off'])) })),
  sandbox: opt(oneOf(['auto', 'required', 'off'])),
  runtime: opt(oneOf(['node', 'deno'])),
  pause: opt(
    strictObject({
      maxRefusals: opt(num({ int: true, min: 1, max: 10_000 })),
      windowMs: opt(num({ int: true, min: 1000, max: 86_400_000 })),
    }),
  ),
});

/** plainSettingsParse's answer, undefined for NO. */
export function plainSettings(json: unknown): Settings | undefined {
  const s = plainSettingsParse(json);
  return s === NO ? undefined : s;
}
