// The browser host's own hints for host-neutral core errors (core names the facts; the browser names the API call or
// setting); browser host, trusted side.

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * A hint for an error from core, from its stable `code` and `data` (never from the message text), naming the browser
 * host's API: `createBrowserHost({ rules })` for the rule that would allow a request, `host.resume(name)` for a pause,
 * `host.revokeDecision(...)` for a remembered "no", `host.approvals.subscribe` when nobody could be asked.
 * @returns undefined when there is nothing to add.
 */
export function browserHint(code: string, data: Record<string, unknown> | undefined): string | undefined {
  const d = data ?? {};
  const parts: string[] = [];
  if (d.reason === 'no-channel') parts.push('to be asked, keep the page visible or subscribe to host.approvals');
  if (str(d.allowRule))
    parts.push(
      `to allow it without asking, add the rule "${str(d.allowRule)}" to createBrowserHost({ rules: [{ scope: 'session', allow: [...] }] })`,
    );
  if (str(d.revoke))
    parts.push(`revoke that answer with host.revokeDecision({ tool: ${JSON.stringify(str(d.revoke))} })`);
  if (str(d.paused)) parts.push(`resume with host.resume(${JSON.stringify(str(d.paused))})`);
  if (code === 'E_SECRET_DENIED' && str(d.secret))
    parts.push(`the app provides secret values through createBrowserHost({ secretValues })`);
  if (code === 'E_INTEGRITY' && d.repair === 'install-again')
    parts.push('repair it with host.registry.install(manifest)');
  if (code === 'E_INVALID_MANIFEST' && d.secretLike === true)
    parts.push('the app provides secret values through createBrowserHost({ secretValues })');
  return parts.length ? parts.join('; ') : undefined;
}

/** `message` with the browser hint for `code`/`data` appended (`MESSAGE; HINT`). */
export function withBrowserHint(code: string, message: string, data: Record<string, unknown> | undefined): string {
  const h = browserHint(code, data);
  return h ? `${message}; ${h}` : message;
}
