// tycli tool remove|gc|diff: the end of a revision's life and comparing two; Node host, trusted side.
import { createTwoFilesPatch } from 'diff';
import type { ToolManifest } from '../../../../protocol/manifest.js';
import type { ResolvedTool } from '../../../../core/revisions/registry.js';
import { shortId } from '../../../../core/revisions/refs.js';
import type { CliCommand, CliContext } from '../../types.js';
import { note, out, outJson, paint, terminalSafe, usage } from '../../output.js';

async function openHost(ctx: CliContext) {
  const { createNodeHost } = await import('../../../host/host.js');
  return createNodeHost({
    home: ctx.globals.home,
    globals: ctx.globals,
    io: ctx.io,
    env: ctx.env,
    cwd: ctx.cwd,
    startSandboxes: false,
  });
}

const remove: CliCommand = {
  path: ['tool', 'remove'],
  summary: 'remove a tool name (needs --approve-removal); its revisions stay until tycli tool gc',
  usage: `Usage: tycli tool remove NAME [--approve-removal]

Unbinds NAME: 'tycli run NAME' and model calls by name no longer reach it. Like replacing an active
binding, this is refused with E_APPROVAL_REQUIRED (exit 1) unless --approve-removal is given.
Its revisions stay stored, so calls and tasks pinned as NAME@REV keep working and
'tycli tool activate NAME REV' binds one again; 'tycli tool gc' deletes those nothing references.
With --json: {"ok":true,"name","removed":REV}.`,
  options: { 'approve-removal': { type: 'boolean' } },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage('tycli tool remove takes exactly one NAME');
    const name = pos[0]!;
    const host = await openHost(ctx);
    try {
      const approve = v['approve-removal'] === true;
      const before = (await host.registry.binding(name))?.active ?? '*';
      const b = await host.changes.run(
        {
          principal: 'cli:user',
          kind: 'registry',
          tool: name,
          revision: before,
          target: 'remove',
          rule: `tycli tool remove${approve ? ' --approve-removal' : ''}`,
        },
        () => host.registry.remove(name, { approveRemoval: approve }),
      );
      if (ctx.globals.json) outJson(ctx, { ok: true, name, removed: b.active });
      else
        note(
          ctx,
          `removed ${name} (was ${shortId(b.active!)}); its ${b.revisions.length} revision(s) stay until 'tycli tool gc'`,
        );
      return 0;
    } finally {
      await host.close();
    }
  },
};

const gc: CliCommand = {
  path: ['tool', 'gc'],
  summary: 'delete stored revisions nothing references (binding, decision, pinned task, grant, storage)',
  usage: `Usage: tycli tool gc [--dry-run]

Deletes every stored tool revision that is not the active revision of a name, has no permanent
decision a person made, is not pinned by a stored task, has no secret granted to it, no tool
storage data and no settings a person stored. Everything else is kept and listed with the reason.
  --dry-run   show what would be deleted; change nothing
With --json: {"ok":true,"dryRun","removed":[{"name","revision"}],"kept":[{"name","revision","reasons"}]}.`,
  options: { 'dry-run': { type: 'boolean' } },
  allowPositionals: false,
  async run(ctx, v) {
    const dryRun = v['dry-run'] === true;
    const host = await openHost(ctx);
    try {
      const what = {
        principal: 'cli:user',
        kind: 'registry',
        tool: '*',
        revision: '*',
        target: 'gc',
        rule: 'tycli tool gc',
      };
      // a dry run changes nothing and is not audited; a collection is, and each revision it deleted
      const r = dryRun ? await host.registry.gc({ dryRun }) : await host.changes.run(what, () => host.registry.gc());
      if (!dryRun) for (const x of r.removed) await host.changes.done({ ...what, tool: x.name, revision: x.revision });
      if (ctx.globals.json) {
        outJson(ctx, { ok: true, dryRun, removed: r.removed, kept: r.kept });
        return 0;
      }
      const verb = dryRun ? 'would delete' : 'deleted';
      for (const x of r.removed) out(ctx, `${verb} ${x.name}@${shortId(x.revision)}`);
      for (const x of r.kept) note(ctx, `kept ${x.name}@${shortId(x.revision)} (${x.reasons.join(', ')})`);
      note(ctx, `${verb} ${r.removed.length} revision(s), kept ${r.kept.length}`);
      return 0;
    } finally {
      await host.close();
    }
  },
};

/** The manifest without its code, as pretty JSON lines (keys sorted, so a moved key is no change). */
function manifestText(m: ToolManifest): string {
  const sorted = (x: unknown): unknown =>
    Array.isArray(x)
      ? x.map(sorted)
      : x && typeof x === 'object'
        ? Object.fromEntries(
            Object.keys(x)
              .sort()
              .map((k) => [k, sorted((x as Record<string, unknown>)[k])]),
          )
        : x;
  const copy = structuredClone(m) as Record<string, unknown> & { execution: Record<string, unknown> };
  if ('source' in copy.execution)
    copy.execution.source = `(${String(copy.execution.source).length} characters, compared below)`;
  return `${JSON.stringify(sorted(copy), null, 2)}\n`;
}

/** Code of a revision, one entry per file: the source files of a bundle (from its source map) or the one module. */
function codeFiles(t: ResolvedTool): Map<string, string> {
  const files = new Map<string, string>();
  const ex = t.manifest.execution;
  if (ex.kind !== 'sandboxed-code') return files;
  const inputs = (ex as { bundle?: { sourceMap?: string } }).bundle?.sourceMap;
  if (inputs) {
    try {
      const map = JSON.parse(inputs) as { sources?: unknown; sourcesContent?: unknown };
      if (Array.isArray(map.sources) && Array.isArray(map.sourcesContent)) {
        map.sources.forEach((s, i) => {
          const c = (map.sourcesContent as unknown[])[i];
          if (typeof s === 'string' && typeof c === 'string') files.set(s, c);
        });
        if (files.size > 0) return files;
      }
    } catch {
      /* fall back to the bundled module */
    }
  }
  files.set('source', ex.source.endsWith('\n') ? ex.source : `${ex.source}\n`);
  return files;
}

const diff: CliCommand = {
  path: ['tool', 'diff'],
  summary: 'compare two revisions: NAME@A NAME@B (manifest fields and code, unified diff)',
  usage: `Usage: tycli tool diff NAME@A NAME@B

A and B are revision ids or unique prefixes (8+ characters); NAME alone means its active revision.
Prints a unified diff of the manifests (keys sorted, code left out) and then of the code: for a bundled
tool, file by file from the revision's source map; otherwise the one module. Exit 0 either way.
With --json: {"ok":true,"a":{"name","revision"},"b":{...},"same":BOOL,"patch":TEXT}.`,
  async run(ctx, _v, pos) {
    if (pos.length !== 2) usage('tycli tool diff takes two references, NAME@A NAME@B');
    const host = await openHost(ctx);
    try {
      const [a, b] = [await host.registry.resolve(pos[0]!), await host.registry.resolve(pos[1]!)];
      const la = `${a.name}@${shortId(a.revision)}`;
      const lb = `${b.name}@${shortId(b.revision)}`;
      const parts: string[] = [];
      const add = (p: string) => {
        if (p.split('\n').some((l) => /^[-+@]/.test(l) && !/^(---|\+\+\+) /.test(l))) parts.push(p);
      };
      add(
        createTwoFilesPatch(
          `${la}/manifest.json`,
          `${lb}/manifest.json`,
          manifestText(a.manifest),
          manifestText(b.manifest),
          '',
          '',
          { context: 3 },
        ),
      );
      const fa = codeFiles(a);
      const fb = codeFiles(b);
      for (const f of [...new Set([...fa.keys(), ...fb.keys()])].sort()) {
        add(
          createTwoFilesPatch(
            fa.has(f) ? `${la}/${f}` : '/dev/null',
            fb.has(f) ? `${lb}/${f}` : '/dev/null',
            fa.get(f) ?? '',
            fb.get(f) ?? '',
            '',
            '',
            { context: 3 },
          ),
        );
      }
      const patch = parts.map((p) => p.replace(/^=+\n/, '')).join('');
      if (ctx.globals.json) {
        outJson(ctx, {
          ok: true,
          a: { name: a.name, revision: a.revision },
          b: { name: b.name, revision: b.revision },
          same: parts.length === 0,
          patch,
        });
        return 0;
      }
      if (parts.length === 0) {
        note(ctx, `${la} and ${lb} do not differ`);
        return 0;
      }
      const colored = terminalSafe(ctx, patch)
        .split('\n')
        .map((l) =>
          /^(\+\+\+|---) /.test(l)
            ? paint(ctx, 'bold', l)
            : l.startsWith('+')
              ? paint(ctx, 'green', l)
              : l.startsWith('-')
                ? paint(ctx, 'red', l)
                : l.startsWith('@@')
                  ? paint(ctx, 'cyan', l)
                  : l,
        )
        .join('\n');
      out(ctx, colored);
      return 0;
    } finally {
      await host.close();
    }
  },
};

export const lifecycleCommands: CliCommand[] = [remove, gc, diff];
