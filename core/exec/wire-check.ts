// What a sandbox may send the host, parsed by hand with protocol/wire.ts SandboxMessageSchema's verdict and output;
// core, trusted side.
// The host reads every sandbox message through this parse, so the channel never loads zod. core/exec/wire-check.test.ts
// holds it to the schema: the same verdict and output on every value JSON.parse (Node) or a structured clone (the
// browser) can deliver; narrower only on objects no message can be (another prototype), never wider.
import { CALL_PHASES, CAPABILITY_NAMES, PROTOCOL_VERSION } from '../../protocol/names.js';
import type { WireError } from '../../protocol/errors.js';
import type { SandboxMessage } from '../../protocol/wire.js';
import {
  NO,
  accepts,
  bool,
  byKey,
  either,
  num,
  oneOf,
  opt,
  present,
  req,
  str,
  strictObject,
  unknown,
} from '../schema/hand.js';

/** protocol/errors.ts WireErrorSchema. */
const wireError = strictObject<WireError>({
  code: req(either<string | number>(str({ max: 64 }), num({ int: true }))),
  message: req(str({ max: 4096 })),
  data: opt(unknown),
});
/** WireErrorSchema's verdict. */
export const isWireError = accepts(wireError);

const v = req(oneOf([PROTOCOL_VERSION]));
const type = (name: SandboxMessage['type']) => req(oneOf([name]));
const id = req(num({ int: true, nonnegative: true }));
const message = byKey<SandboxMessage>('type', {
  ready: strictObject({ v, type: type('ready'), runtime: req(str({ max: 64 })), version: opt(str({ max: 64 })) }),
  loaded: strictObject({ v, type: type('loaded'), ok: req(bool), error: opt(wireError) }),
  result: strictObject({ v, type: type('result'), id, ok: req(bool), json: opt(str()), error: opt(wireError) }),
  cap: strictObject({ v, type: type('cap'), id, callId: id, name: req(oneOf(CAPABILITY_NAMES)), params: present }),
  'cap-cancel': strictObject({ v, type: type('cap-cancel'), id }),
  log: strictObject({
    v,
    type: type('log'),
    level: req(oneOf(['debug', 'info', 'warn', 'error'])),
    text: req(str({ max: 8192 })),
  }),
  progress: strictObject({
    v,
    type: type('progress'),
    callId: id,
    fraction: req(num({ min: 0, max: 1 })),
    message: opt(str({ max: 200 })),
  }),
  phase: strictObject({ v, type: type('phase'), id, phase: req(oneOf(CALL_PHASES)) }),
});

/**
 * `value` as SandboxMessageSchema's parse returns it (a new object, the schema's keys in its order; `params` and
 * `error.data` as sent), or undefined when the schema refuses it (or it is an object of another prototype than a
 * message has). No zod loaded.
 */
export function sandboxMessage(value: unknown): SandboxMessage | undefined {
  const m = message(value);
  return m === NO ? undefined : m;
}
