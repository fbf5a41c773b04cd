// Host-to-sandbox wire messages (one JSON object per line / per postMessage); pure data, versioned.
import { z } from 'zod';
import { WireErrorSchema } from './errors.js';
import { CALL_PHASES, CAPABILITY_NAMES, PROTOCOL_VERSION } from './names.js';

export { PROTOCOL_VERSION, CAPABILITY_NAMES, type CapabilityName } from './names.js';
const V = z.literal(PROTOCOL_VERSION);
const Id = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

// host -> sandbox
export const LoadMessageSchema = z.strictObject({
  v: V,
  type: z.literal('load'),
  runtime: z.enum(['javascript', 'python']),
  source: z.string(),
});
/** `settings`: the call's settings values (a JSON object), read by the tool as `ctx.settings`; absent: `{}`. */
export const CallMessageSchema = z.strictObject({
  v: V,
  type: z.literal('call'),
  id: Id,
  args: z.unknown(),
  settings: z.record(z.string(), z.unknown()).optional(),
});
export const CapabilityReplySchema = z.strictObject({
  v: V,
  type: z.literal('cap-reply'),
  id: Id,
  ok: z.boolean(),
  value: z.unknown().optional(),
  error: WireErrorSchema.optional(),
});
export const HostMessageSchema = z.discriminatedUnion('type', [
  LoadMessageSchema,
  CallMessageSchema,
  CapabilityReplySchema,
]);
export type HostMessage = z.infer<typeof HostMessageSchema>;

// sandbox -> host
export const ReadyMessageSchema = z.strictObject({
  v: V,
  type: z.literal('ready'),
  runtime: z.string().max(64),
  version: z.string().max(64).optional(),
});
export const LoadedMessageSchema = z.strictObject({
  v: V,
  type: z.literal('loaded'),
  ok: z.boolean(),
  error: WireErrorSchema.optional(),
});
export const ResultMessageSchema = z.strictObject({
  v: V,
  type: z.literal('result'),
  id: Id,
  ok: z.boolean(),
  /** JSON text of the result, so the host measures and parses it without touching guest objects. */
  json: z.string().optional(),
  error: WireErrorSchema.optional(),
});
export const CapabilityRequestSchema = z.strictObject({
  v: V,
  type: z.literal('cap'),
  id: Id,
  callId: Id,
  name: z.enum(CAPABILITY_NAMES),
  params: z.unknown(),
});
/**
 * The tool cancelled capability request `id` (its own AbortSignal fired); the host aborts it and its reply is ignored.
 */
export const CapabilityCancelSchema = z.strictObject({ v: V, type: z.literal('cap-cancel'), id: Id });
export const LogMessageSchema = z.strictObject({
  v: V,
  type: z.literal('log'),
  level: z.enum(['debug', 'info', 'warn', 'error']),
  text: z.string().max(8192),
});
/**
 * The tool reported how far call `callId` is (`ctx.progress(fraction, message)`): `fraction` 0..1, `message` its own
 * words. Advisory: the host forwards at most one per 100 ms per call (the latest wins) and drops it after the call.
 */
export const ProgressMessageSchema = z.strictObject({
  v: V,
  type: z.literal('progress'),
  callId: Id,
  fraction: z.number().min(0).max(1),
  message: z.string().max(200).optional(),
});

/**
 * Which part of the tool call `id` runs now, so a time limit names it: `module` (a Python module's top-level code,
 * run at each call unless its state is retained), then `main` (the tool's `main(args, ctx)`). A JavaScript call runs
 * its default export only (its module ran at load) and sends none.
 */
export const PhaseMessageSchema = z.strictObject({
  v: V,
  type: z.literal('phase'),
  id: Id,
  phase: z.enum(CALL_PHASES),
});
export const SandboxMessageSchema = z.discriminatedUnion('type', [
  ReadyMessageSchema,
  LoadedMessageSchema,
  ResultMessageSchema,
  CapabilityRequestSchema,
  CapabilityCancelSchema,
  LogMessageSchema,
  ProgressMessageSchema,
  PhaseMessageSchema,
]);
export type SandboxMessage = z.infer<typeof SandboxMessageSchema>;

/** A fetch request as it crosses the boundary: plain data only. */
export const FetchRequestSchema = z.strictObject({
  url: z.string().max(8192),
  method: z
    .string()
    .regex(/^[A-Za-z]{1,16}$/)
    .default('GET'),
  headers: z
    .array(z.tuple([z.string().max(256), z.string().max(16384)]))
    .max(128)
    .default([]),
  /** base64 body, at most the request cap. */
  body: z
    .string()
    .max(24 * 1024 * 1024)
    .optional(),
});
export type FetchRequest = z.infer<typeof FetchRequestSchema>;
export const FetchResponseSchema = z.strictObject({
  status: z.number().int().min(100).max(999),
  statusText: z.string(),
  headers: z.array(z.tuple([z.string(), z.string()])),
  /** base64 body */
  body: z.string(),
  url: z.string(),
});
export type FetchResponse = z.infer<typeof FetchResponseSchema>;
