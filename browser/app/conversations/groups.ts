// Conversation list order and groups (Pinned, Today, Yesterday, Previous 7 days, Older), titles from the first words,
// and search over titles and message text; browser app, trusted side.

export type Group = 'Pinned' | 'Today' | 'Yesterday' | 'Previous 7 days' | 'Older';
export const GROUPS: readonly Group[] = ['Pinned', 'Today', 'Yesterday', 'Previous 7 days', 'Older'];

/** Local midnight of the day `t` (ms) falls in. */
function dayStart(t: number): number {
  const d = new Date(t);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

/**
 * The group of a conversation last updated at `updated` (ms), seen at `now`, by local calendar days: today, yesterday,
 * the 7 days before today (yesterday excluded), older. Pinned conversations are their own group.
 */
export function groupOf(updated: number, now: number, pinned = false): Group {
  if (pinned) return 'Pinned';
  const today = dayStart(now);
  if (updated >= today) return 'Today';
  const yesterday = dayStart(today - 1);
  if (updated >= yesterday) return 'Yesterday';
  const week = dayStart(today - 7 * 86_400_000 + 3_600_000);
  return updated >= week ? 'Previous 7 days' : 'Older';
}

/** When a conversation was last updated, short: the time today, else the weekday this week, else the date. */
export function whenText(updated: number, now: number): string {
  const g = groupOf(updated, now);
  const d = new Date(updated);
  if (g === 'Today') return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (g === 'Yesterday' || g === 'Previous 7 days') return d.toLocaleDateString(undefined, { weekday: 'short' });
  return d.toLocaleDateString(undefined, {
    day: 'numeric',
    month: 'short',
    ...(new Date(now).getFullYear() !== d.getFullYear() ? { year: 'numeric' } : {}),
  });
}

/** Longest title (characters). */
export const MAX_TITLE = 80;

/**
 * A title from the first words of a message: its first non-empty line, spaces folded, cut at a word boundary to at
 * most 60 characters with "…". Empty text gives "New conversation".
 */
export function firstWordsTitle(text: string): string {
  const line = (text.split('\n').find((l) => l.trim()) ?? '').replace(/\s+/g, ' ').trim();
  if (!line) return 'New conversation';
  if (line.length <= 60) return line;
  const cut = line.slice(0, 60);
  const space = cut.lastIndexOf(' ');
  return `${(space > 30 ? cut.slice(0, space) : cut).replace(/[\s.,;:!?-]+$/, '')}…`;
}

/** `title`, or `title (2)`, `(3)`… when another conversation already has it, so two can be told apart. */
export function distinctTitle(title: string, others: Iterable<string>): string {
  const taken = new Set(others);
  if (!taken.has(title)) return title;
  for (let n = 2; n < 1000; n++) {
    const t = `${title.slice(0, MAX_TITLE - 6)} (${n})`;
    if (!taken.has(t)) return t;
  }
  return title;
}

/**
 * A title the model proposed, made safe to show: one line, no surrounding quotes or "Title:", no markdown emphasis, at
 * most MAX_TITLE characters. Undefined when nothing is left.
 */
export function cleanModelTitle(raw: string): string | undefined {
  const line = (raw.split('\n').find((l) => l.trim()) ?? '')
    .replace(/^\s*(title\s*:\s*)/i, '')
    .replace(/[*_#`]/g, '')
    .replace(/[\u0000-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, '')
    .trim()
    .replace(/^["'“”‘’«»]+|["'“”‘’«».]+$/g, '')
    .trim();
  return line ? line.slice(0, MAX_TITLE) : undefined;
}

/** The words of a search (lower case, NFKC), at most 8. */
export function searchTerms(q: string): string[] {
  return q.normalize('NFKC').toLowerCase().split(/\s+/).filter(Boolean).slice(0, 8);
}

/**
 * Does a conversation match every term (in its title or its messages' text)? Returns a snippet of the text around the
 * first term found there ('' when only the title matched), or undefined when it does not match.
 */
export function matchConversation(title: string, text: string, terms: string[]): string | undefined {
  if (terms.length === 0) return '';
  const t = title.normalize('NFKC').toLowerCase();
  const body = text.normalize('NFKC').toLowerCase();
  if (!terms.every((w) => t.includes(w) || body.includes(w))) return undefined;
  const first = terms.map((w) => body.indexOf(w)).filter((i) => i >= 0);
  if (first.length === 0) return '';
  const at = Math.min(...first);
  const from = Math.max(0, at - 30);
  const snippet = text
    .normalize('NFKC')
    .slice(from, at + 60)
    .replace(/\s+/g, ' ')
    .trim();
  return `${from > 0 ? '…' : ''}${snippet}${at + 60 < text.length ? '…' : ''}`;
}
