// tycli tool add|list|show|activate: install and inspect tool revisions (remove, gc, diff in lifecycle.ts); Node
// host, trusted side.
import { join, resolve } from 'node:path';
import { revisionArg, toolSettingsCommands } from './settings.js';
import type { CliCommand, CliContext } from '../../types.js';
import { inert, note, out, outJson, terminalSafe, usage } from '../../output.js';
import { inertJson } from '../../../../core/ask/text.js';
import { shortId, uniqueShortIds } from '../../../../core/revisions/refs.js';
import type { StoredRevision } from '../../../../core/revisions/registry.js';
import type { ToolManifest } from '../../../../protocol/manifest.js';
import { lifecycleCommands } from './lifecycle.js';

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

/** `path`, or `path/manifest.json` when `path` is a folder holding one (a folder without one: usage error). */
async function manifestPath(path: string): Promise<string> {
  const { stat } = await import('node:fs/promises');
  const st = await stat(path).catch(() => undefined);
  if (!st?.isDirectory()) return path;
  const inside = join(path, 'manifest.json');
  if (!(await stat(inside).catch(() => undefined))?.isFile())
    usage(`${path} is a folder without a manifest.json; give the manifest file`);
  return inside;
}

const add: CliCommand = {
  path: ['tool', 'add'],
  summary: 'install a tool revision from a manifest file (prints its revision id)',
  usage: `Usage: tycli tool add MANIFEST.json|FOLDER [--engine node|deno|quickjs]

A FOLDER means its manifest.json. The manifest's "execution.sourceFile" (relative to the manifest) is read and inlined as "source"
before hashing, so the revision id covers the code. A Python revision's "python.packages" wheels
({"file", "sha256"}, pure-Python only) must sit next to the manifest and match their sha256; they are
read from there (and checked again) when the revision runs. The same manifest always yields the same id.
A new name becomes active at once; a new revision of an existing name is installed but not active
until 'tycli tool activate NAME REV --approve-replacement'.
  --engine     sets "execution.engine" of a JavaScript tool before hashing (so it is part of the revision):
               node (the default), deno, or quickjs (QuickJS in WebAssembly: many sandboxes per process, exact
               memory and time limits, no file system; docs/manifest.md says when to choose it).`,
  options: { engine: { type: 'string' } },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage(`tycli tool add takes exactly one MANIFEST.json or FOLDER (got ${pos.length})`);
    const engine = v.engine as string | undefined;
    if (engine !== undefined && engine !== 'node' && engine !== 'deno' && engine !== 'quickjs')
      usage(`--engine takes node, deno or quickjs (got ${inert(engine)})`);
    const { loadManifestFile } = await import('../../../manifest/file.js'); // loads the bundler only when needed
    const file = await manifestPath(resolve(ctx.cwd, pos[0]!));
    const manifest = await loadManifestFile(file);
    if (engine !== undefined) {
      const exec = (manifest as { execution?: Record<string, unknown> }).execution;
      if (exec?.kind !== 'sandboxed-code')
        usage('--engine applies to sandboxed code (execution.kind "sandboxed-code")');
      exec.engine = engine;
    }
    const { pythonPackagesOf } = await import('../../../manifest/file.js');
    const wheels = await pythonPackagesOf(file, manifest);
    const host = await openHost(ctx);
    try {
      // audited like the protocol's tool/add: an intent record (name, revision) before anything is stored, its
      // completion after, so an interrupted add leaves a trace (a manifest refused as invalid changes nothing)
      const [{ parseManifest }, { revisionId }] = await Promise.all([
        import('../../../../core/manifest/parse.js'),
        import('../../../../core/revisions/registry.js'),
      ]);
      const parsed = parseManifest(manifest);
      const revision = await revisionId(parsed);
      const change = { principal: 'cli:user', kind: 'registry', tool: parsed.name, revision, target: 'add' };
      const r = await host.changes.run({ ...change, rule: 'tycli tool add' }, async () => {
        const installed = await host.registry.install(manifest);
        // Where this revision's wheels are read from at run time (checked by sha-256 again then).
        if (wheels) {
          const { PYTHON_PACKAGES_NS } = await import('../../../python/sandbox.js');
          await host.store.putJson(PYTHON_PACKAGES_NS, installed.revision, { dir: wheels.dir });
        }
        return installed;
      });
      if (ctx.globals.json)
        outJson(ctx, {
          ok: true,
          name: r.manifest.name,
          revision: r.revision,
          created: r.created,
          activated: r.activated,
          repaired: r.repaired,
        });
      else {
        out(ctx, r.revision);
        const binding = (await host.registry.resolve(r.manifest.name)).revision;
        // MCP tool names SERVER__TOOL split at the first "__": a registered name holding it would read as a server's
        // tool
        if (r.manifest.name.includes('__'))
          note(
            ctx,
            `note: "${r.manifest.name}" contains "__", which MCP tool names reserve for SERVER__TOOL, so ` +
              `tycli mcp serve does not offer it to MCP clients (tycli run, tycli serve and the app do); a ` +
              `name without "__" is offered`,
          );
        note(
          ctx,
          `${r.created ? 'added' : r.repaired ? 'repaired (the stored copy had been altered):' : 'already installed:'} ` +
            `${r.manifest.name}@${r.revision}` +
            (binding === r.revision
              ? ' (active)'
              : `\n  not active; "${r.manifest.name}" runs ${binding}. ` +
                `Switch with: tycli tool activate ${r.manifest.name} ${r.revision} --approve-replacement`),
        );
      }
      return 0;
    } finally {
      await host.close();
    }
  },
};

const list: CliCommand = {
  path: ['tool', 'list'],
  summary: 'list installed tools (short ids); --revisions lists every stored revision with its date',
  usage: `Usage: tycli tool list [--revisions] [--full]

  --revisions  every stored revision, one per line: name, revision, when it was added, and whether it is
               active, installed (bound to the name but not active) or unbound (its name was removed;
               kept until 'tycli tool gc' because something still references it, or not yet collected)
  --full       print whole revision ids instead of short ones

Revisions are shown as short ids: 12 characters of the digest (the part after the "bagaaiera" every id
starts with), lengthened where two would look alike. Any unique prefix of 8 or more characters, with or
without that head, is accepted wherever NAME@REV is.
Built-in tools of this host (the native "python" tool, offered when a python3 is on PATH) are listed
with "built-in": they live in memory, never in the store, and their revision id is the CID of their
manifest (the same on every run). An installed tool of the same name takes precedence. A removed name
is not listed (its revisions are, with --revisions).
With --json: {"ok":true,"tools":[{"name","active","revisions"[,"builtin":true]}]} with whole ids, or with
--revisions {"ok":true,"revisions":[{"name","revision","addedAt","status"}]}.`,
  allowPositionals: false,
  options: { revisions: { type: 'boolean' }, full: { type: 'boolean' } },
  async run(ctx, v) {
    const host = await openHost(ctx);
    try {
      if (v.revisions) return await listRevisions(ctx, host.registry, v.full === true);
      const tools = (await host.registry.list()).filter((t) => t.active !== undefined);
      if (ctx.globals.json) outJson(ctx, { ok: true, tools });
      else if (tools.length === 0) note(ctx, 'no tools installed; add one with: tycli tool add MANIFEST.json');
      else {
        const short = v.full ? (r: string) => r : abbreviator(tools.flatMap((t) => t.revisions));
        const w = Math.max(4, ...tools.map((t) => t.name.length));
        const rw = Math.max(15, ...tools.map((t) => short(t.active!).length));
        out(ctx, `${'NAME'.padEnd(w)}  ${'ACTIVE REVISION'.padEnd(rw)}  REVISIONS`);
        for (const t of tools)
          out(
            ctx,
            `${t.name.padEnd(w)}  ${short(t.active!).padEnd(rw)}  ${t.builtin ? 'built-in' : t.revisions.length}`,
          );
      }
      return 0;
    } finally {
      await host.close();
    }
  },
};

/** Short ids, unique within `ids` (core/revisions/refs.ts uniqueShortIds). */
export function abbreviator(ids: string[]): (id: string) => string {
  const m = uniqueShortIds(ids);
  return (id) => m.get(id) ?? shortId(id);
}

async function listRevisions(
  ctx: CliContext,
  registry: { revisions(): Promise<StoredRevision[]> },
  full: boolean,
): Promise<number> {
  const rows = await registry.revisions();
  if (ctx.globals.json) {
    outJson(ctx, {
      ok: true,
      revisions: rows.map((r) => ({
        name: r.name,
        revision: r.revision,
        addedAt: r.addedAt ?? null,
        status: r.status,
      })),
    });
    return 0;
  }
  if (rows.length === 0) {
    note(ctx, 'no revisions stored; add one with: tycli tool add MANIFEST.json');
    return 0;
  }
  const short = full ? (r: string) => r : abbreviator(rows.map((r) => r.revision));
  const w = Math.max(4, ...rows.map((r) => r.name.length));
  const rw = Math.max(8, ...rows.map((r) => short(r.revision).length));
  out(ctx, `${'NAME'.padEnd(w)}  ${'REVISION'.padEnd(rw)}  ${'ADDED'.padEnd(20)}  STATUS`);
  for (const r of rows) {
    const when = r.addedAt ? r.addedAt.replace(/\.\d+Z$/, 'Z') : '-';
    out(ctx, `${r.name.padEnd(w)}  ${short(r.revision).padEnd(rw)}  ${when.padEnd(20)}  ${r.status}`);
  }
  return 0;
}

const show: CliCommand = {
  path: ['tool', 'show'],
  summary: 'show one revision: NAME (the active one) or NAME@REV',
  usage:
    'Usage: tycli tool show NAME|NAME@REV [--source] [--full]\n\n  --source   also print the code\n ' +
    ' --full     print the whole revision id (default: a short id; REV may be any unique prefix ' +
    'of 8+ characters)\n\nWith --json: {"ok":true,"name","revision","active","manifest"} (the whole ' +
    'id).',
  options: { source: { type: 'boolean' }, full: { type: 'boolean' } },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage('tycli tool show takes exactly one NAME or NAME@REV');
    const host = await openHost(ctx);
    try {
      const t = await host.registry.resolve(pos[0]!);
      if (ctx.globals.json) {
        outJson(ctx, { ok: true, name: t.name, revision: t.revision, active: t.active, manifest: t.manifest });
        return 0;
      }
      const m = t.manifest;
      const ex = m.execution;
      const lines = [
        `name:         ${t.name}`,
        `revision:     ${v.full ? t.revision : shortId(t.revision)}${t.active ? ' (active)' : ' (not active)'}`,
        `description:  ${m.description.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ')}`,
        `execution:    ${ex.kind}${executionDetail(ex)}`,
        `capabilities: ${m.capabilities ? inertJson(m.capabilities) : 'none requested'}`,
        `limits:       ${m.limits ? inertJson(m.limits) : 'host defaults'}`,
        `parameters:   ${inertJson(m.parameters, 2).replace(/\n/g, '\n              ')}`,
      ];
      // a tool's own text (name, description, schema) is shown inert on any output; --source prints the code as it is
      out(ctx, inert(lines.join('\n')));
      if (v.source && ex.kind === 'sandboxed-code') out(ctx, terminalSafe(ctx, `\n${ex.source}`));
      return 0;
    } finally {
      await host.close();
    }
  },
};

const activate: CliCommand = {
  path: ['tool', 'activate'],
  summary: 'bind NAME to an installed revision (replacing needs --approve-replacement)',
  usage: `Usage: tycli tool activate NAME REV [--approve-replacement]

REV is a revision id, a unique prefix of 8 or more characters, or NAME@REV as other commands print it.
Replacing a different active revision is refused with E_APPROVAL_REQUIRED (exit 1) unless
--approve-replacement is given. Calls pinned as NAME@REV keep their revision either way.`,
  options: { 'approve-replacement': { type: 'boolean' } },
  async run(ctx, v, pos) {
    if (pos.length !== 2) usage('tycli tool activate takes NAME and REV');
    const [name, given] = pos as [string, string];
    const rev = revisionArg(name, given, 'REV');
    const host = await openHost(ctx);
    try {
      const { parseRef } = await import('../../../../core/revisions/registry.js');
      parseRef(`${name}@${rev}`);
      const full = (await host.registry.resolve(`${name}@${rev}`)).revision;
      const approve = v['approve-replacement'] === true;
      await host.changes.run(
        {
          principal: 'cli:user',
          kind: 'registry',
          tool: name,
          revision: full,
          target: 'activate',
          rule: `tycli tool activate${approve ? ' --approve-replacement' : ''}`,
        },
        () => host.registry.activate(name, full, { approveReplacement: approve }),
      );
      if (ctx.globals.json) outJson(ctx, { ok: true, name, revision: full });
      else note(ctx, `${name} now runs ${full}`);
      return 0;
    } finally {
      await host.close();
    }
  },
};

export const toolCommands: CliCommand[] = [add, list, show, activate, ...lifecycleCommands, ...toolSettingsCommands];

/** What follows the execution kind in `tool show`: runtime, engine and source size, native entry, or service. */
function executionDetail(ex: ToolManifest['execution']): string {
  if (ex.kind === 'sandboxed-code')
    return ` ${ex.runtime}${ex.engine ? ` (${ex.engine})` : ''}, ${ex.source.length} characters of source`;
  if (ex.kind === 'trusted-native') return ` entry ${ex.entry}`;
  return ` service ${ex.serviceId}${ex.tool ? ` tool ${ex.tool}` : ''}`;
}
