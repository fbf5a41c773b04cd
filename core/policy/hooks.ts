// The hooks settings can attach to the gate (pre/post tool use, permission requests): their shapes and the permission
// hook's answer; core, trusted side.
import type { GateRequest } from '../exec/runtime.js';
import type { Scope } from './permissions.js';

export type HookEvent = 'preToolUse' | 'postToolUse' | 'permissionRequest';

/** One hook from settings. */
export interface HookSpec {
  event: HookEvent;
  /** `*`, a tool-name glob, or a rule (core/policy/permissions.ts parseMatcher). */
  matcher: string;
  /** A shell command line (run by node/host/hooks.ts). */
  command: string;
  /** Kill the hook after this long, ms. */
  timeoutMs: number;
  scope: Scope;
  /** Host-side only (settings file path). */
  source?: string;
  /** Position in its list, from 0. */
  index: number;
}

/** What a hook run produced. `exitCode` null when it was killed or never started (`error` says why). */
export interface HookResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  error?: string;
}

/** Runs hook commands (node/host/hooks.ts). Must never throw; failures come back in the result. */
export interface HookRunner {
  /** Run `hook` with `input` (one JSON document) on stdin. */
  run(hook: HookSpec, input: string, signal?: AbortSignal): Promise<HookResult>;
}

/**
 * The JSON a hook gets on stdin. Never secret values: `input` is the call's arguments with every known
 * secret value replaced by `<withheld>`; `result` (post only) likewise, and omitted above 256 KiB.
 */
export interface HookPayload {
  event: HookEvent;
  principal: string;
  tool: { name: string; revision: string };
  kind: GateRequest['kind'];
  target?: string;
  access?: 'read' | 'write';
  input?: unknown;
  /** permissionRequest only: the rule/trace that asked, and the rule that would allow it. */
  trace?: { list: string; rule: string; scope: string };
  suggestedRule?: string;
  /** postToolUse only */
  outcome?: 'ok' | 'error';
  code?: string;
  result?: unknown;
}

/** A permissionRequest hook's stdout: `{"decision":"allow"|"deny"}` (anything else: no opinion). */
export function parseHookDecision(stdout: string): 'allow' | 'deny' | undefined {
  try {
    const v = JSON.parse(stdout.trim()) as unknown;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const d = (v as Record<string, unknown>).decision;
      if (d === 'allow' || d === 'deny') return d;
    }
  } catch {
    /* not JSON: no opinion */
  }
  return undefined;
}
