// protocol/manifest.ts ToolManifestSchema mirrored without zod, for reading the store's revisions on every call; core,
// trusted side.
// core/manifest/check.test.ts holds it to the schema: whatever it accepts, the schema accepts with the same output.
import type { ToolManifest } from '../../protocol/manifest.js';
import {
  ORIGIN_PATTERN_RE,
  PURE_WHEEL_RE,
  REQUESTED_SECRET_RE,
  SHA256_HEX_RE,
  SRI_SHA256_RE,
  TOOL_NAME_RE,
  TOOL_PATH_RE,
} from '../../protocol/names.js';
import { NO, arr, bool, byKey, num, oneOf, opt, record, req, str, strictObject, type Parse } from '../schema/hand.js';

const toolName = str({ re: TOOL_NAME_RE });
const toolPath = str({ min: 1, max: 4096, re: TOOL_PATH_RE });
const MIB = 1024 * 1024;

const bundle = strictObject({
  entry: req(toolPath),
  bundler: req(str({ min: 1, max: 64 })),
  inputs: req(
    arr(
      strictObject({
        path: req(toolPath),
        bytes: req(num({ int: true, nonnegative: true })),
        integrity: req(str({ re: SRI_SHA256_RE })),
      }),
      { min: 1, max: 20000 },
    ),
  ),
  packages: req(
    arr(
      strictObject({
        name: req(str({ min: 1, max: 214 })),
        version: req(str({ min: 1, max: 256 })),
        path: req(toolPath),
        integrity: opt(str({ max: 512 })),
      }),
      { max: 5000 },
    ),
  ),
  sourceMap: opt(str({ max: 16 * MIB })),
});

const execution = byKey('kind', {
  'sandboxed-code': strictObject({
    kind: req(oneOf(['sandboxed-code'])),
    runtime: req(oneOf(['javascript', 'python'])),
    source: req(str({ min: 1, max: 4 * MIB })),
    engine: opt(oneOf(['node', 'deno', 'quickjs'])),
    retainState: opt(bool),
    bundle: opt(bundle),
  }),
  'trusted-native': strictObject({ kind: req(oneOf(['trusted-native'])), entry: req(str({ min: 1, max: 128 })) }),
  'external-service': strictObject({
    kind: req(oneOf(['external-service'])),
    serviceId: req(str({ min: 1, max: 128 })),
    tool: opt(str({ min: 1, max: 256 })),
    transport: opt(oneOf(['mcp', 'parent'])),
  }),
});

const capabilities = strictObject({
  fetch: opt(
    arr(strictObject({ origin: req(str({ re: ORIGIN_PATTERN_RE })), access: req(oneOf(['read', 'write', '*'])) }), {
      max: 64,
    }),
  ),
  storage: opt(strictObject({ quotaBytes: opt(num({ int: true, positive: true, max: 64 * MIB })) })),
  secrets: opt(arr(str({ re: REQUESTED_SECRET_RE }), { max: 64 })),
  subtasks: opt(bool),
  resolveInvocation: opt(arr(toolName, { max: 64 })),
  folders: opt(
    arr(strictObject({ path: req(str({ min: 1, max: 4096 })), access: req(oneOf(['read', 'write'])) }), { max: 16 }),
  ),
});

/**
 * ToolManifestSchema's parse for plain JSON data (what the store holds): the manifest zod would return, or NO when
 * this cannot vouch for it (the caller then asks the schema, which gives the verdict and the message).
 */
export const plainManifest: Parse<ToolManifest> = strictObject<ToolManifest>({
  name: req(toolName),
  description: req(str({ max: 8192 })),
  parameters: req(record),
  outputSchema: opt(record),
  execution: req(execution),
  capabilities: opt(capabilities),
  python: opt(
    strictObject({
      packages: req(
        arr(
          strictObject({ file: req(str({ max: 200, re: PURE_WHEEL_RE })), sha256: req(str({ re: SHA256_HEX_RE })) }),
          { max: 32 },
        ),
      ),
    }),
  ),
  settings: opt(record),
  limits: opt(
    strictObject({
      timeoutMs: opt(num({ int: true, positive: true, max: 24 * 3600 * 1000 })),
      outputBytes: opt(num({ int: true, positive: true, max: 64 * MIB })),
      memoryMb: opt(num({ int: true, positive: true, max: 16384 })),
    }),
  ),
});
export { NO };
