// Plain-language text of a permission question for people in the browser (no command-line flags, no "principal"), every
// field sanitized; browser host, trusted side.
import type { Question } from '../../core/exec/runtime.js';
import { renderQuestion, sanitizeForDisplay, sanitizeInline } from '../../core/ask/text.js';
import { shortId } from '../../core/revisions/refs.js';

/**
 * How many digest characters of a revision id (after the CID head, core/revisions/refs.ts shortId) are shown before it
 * is expanded.
 */
export const SHORT_REVISION_CHARS = 12;

/** The text one approval shows, every string already sanitized (core/ask/text.ts) and meant to be set as text. */
export interface PlainQuestion {
  title: string;
  /** What is asked, one fact per line (tool, what it wants, server hints). */
  lines: string[];
  /** The call's arguments (a preview, secret values withheld), if the request has one. */
  preview: string[];
  revision?: { short: string; full: string };
}

const q = (s: string) => `“${sanitizeInline(s)}”`;

/** What the request wants, in plain words: "read from https://api.example.com", "run", "use its storage". */
function want(f: NonNullable<Question['facts']>): string {
  const target = f.target !== undefined ? sanitizeInline(f.target) : '';
  switch (f.capability) {
    case 'tool':
      return 'run';
    case 'fetch':
      return f.access === 'write' ? `send data to ${target}` : `read from ${target}`;
    case 'storage':
      return f.access === 'write' ? 'change its saved data' : 'read its saved data';
    case 'secret':
      return `use the secret ${target}`;
    case 'mcp':
      return `call ${target}`;
    case 'mcp-resource':
      return `read ${target}`;
    case 'mcp-prompt':
      return `get the prompt ${target}`;
    case 'popup':
      return target === 'custom-html'
        ? 'open a window with its own page (custom HTML, no network)'
        : `open ${target} in a window`;
    case 'python':
      return 'run Python';
    case 'subtasks':
      return 'start more tool calls';
    case 'resolve':
      return 'look up other tool calls';
    default:
      return `use ${sanitizeInline(String(f.capability))}${target ? ` ${target}` : ''}`;
  }
}

/** A registration request (a page or program changing the app's tools), in plain words. */
function registryText(f: NonNullable<Question['facts']>): { title: string; lines: string[] } {
  const p = f.principal ?? '';
  const who = p.startsWith('origin:')
    ? `the page ${sanitizeInline(p.slice(7))}`
    : p.startsWith('protocol:')
      ? `the program ${q(p.slice(9))}`
      : 'a client';
  const verb: Record<string, string> = {
    activate: `switch ${q(f.tool)} to another version`,
    remove: `remove the tool ${q(f.tool)}`,
    add: `add the tool ${q(f.tool)}`,
    read: 'see the installed tools',
    connect: 'connect to this app',
  };
  const does = verb[f.target ?? ''] ?? `change the tool ${q(f.tool)}`;
  return {
    title: `Allow ${who} to ${does}?`,
    lines: [`Asked by: ${who}`, `Tool: ${sanitizeInline(f.tool)}`, `Wants to: ${does}`],
  };
}

function hintText(h: NonNullable<Question['hints']>): string | undefined {
  const said: string[] = [];
  if (h.readOnlyHint === true) said.push('only reads');
  if (h.destructiveHint === true) said.push('may delete or overwrite things');
  if (h.idempotentHint === true) said.push('is safe to repeat');
  if (h.openWorldHint === true) said.push('reaches outside services');
  if (h.readOnlyHint === false) said.push('may change things');
  return said.length
    ? `The server says this ${said.join(', ')} (not checked; it does not skip this question)`
    : undefined;
}

/**
 * The question in plain words. With `q.facts` (every question from core's gate): a title like
 * `Allow “weather” to read from https://api.example.com?`, the tool, its short version (expandable to the full id),
 * server hints as unchecked claims, and the arguments preview. Without facts: core's rendering minus the lines
 * meant for the command line (principal, `--allow` rule).
 */
export function plainQuestion(question: Question): PlainQuestion {
  const f = question.facts;
  if (!f) {
    const all = renderQuestion(question);
    const lines = all
      .slice(1)
      .map((l) => l.replace(/^ {2}/, ''))
      .filter((l) => !/^principal: |^Rule that allows this without asking|^Allow for: /.test(l));
    return { title: all[0] ?? '', lines, preview: [] };
  }
  const reg = f.capability === 'registry' ? registryText(f) : undefined;
  // a browser agent calling the page's tools through WebMCP (browser/webmcp/expose.ts) is named as such
  const agent = f.principal?.startsWith('webmcp:') ? sanitizeInline(f.principal) : undefined;
  const title = reg
    ? reg.title
    : f.capability === 'tool'
      ? agent
        ? `Allow a browser agent to run the tool ${q(f.tool)}?`
        : `Allow the tool ${q(f.tool)} to run?`
      : `Allow ${q(f.tool)} to ${want(f)}?`;
  const lines = reg ? reg.lines : [`Tool: ${sanitizeInline(f.tool)}`, `Wants to: ${want(f)}`];
  if (agent) lines.unshift(`Asked by: a browser agent through this page (${agent})`);
  const hint = question.hints ? hintText(question.hints) : undefined;
  if (hint) lines.push(hint);
  if (!f.rememberable) lines.push('Your settings ask about this every time, so the answer is for this call only.');
  const preview = (f.preview ?? []).flatMap((l) => sanitizeForDisplay(l));
  const full = sanitizeInline(f.revision);
  return { title, lines, preview, revision: { short: shortId(full, SHORT_REVISION_CHARS), full } };
}
