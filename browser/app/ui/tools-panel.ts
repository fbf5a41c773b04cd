// The tools panel: installed tools, add from a manifest, edit source into a new revision (with a diff), activate,
// remove, settings; browser app, trusted side.
import type { ToolManifest } from '../../../protocol/manifest.js';
import { parseManifest } from '../../../core/manifest/parse.js';
import { isTyError, type TyError } from '../../../core/errors.js';
import type { ToolRegistry } from '../../../core/revisions/registry.js';
import { h, replaceChildren, shortId } from '../dom.js';
import { lineDiff } from './diff.js';
import type { SecretGrants } from '../../../core/capabilities/secrets.js';
import type { BrowserHost } from '../../host.js';
import { settingsForm } from './settings-form.js';
import { judgeFetchOrigin } from '../../../core/capabilities/fetch/mediated.js';

export interface ToolsPanelDeps {
  registry: ToolRegistry;
  /** The host's per-tool settings API; tools whose manifest declares `settings` get a settings form. */
  tools?: BrowserHost['tools'];
  /** Grants of tool secrets to exact revisions (core/capabilities/secrets.ts), in the host store. */
  grants: SecretGrants;
  /** Names not offered to the model (changed in place, then `saveDisabled`). */
  disabled: Set<string>;
  saveDisabled(): Promise<void>;
  /** Add a tooldefinition task at the end of the current branch (visible only after it, never installed). */
  defineInConversation(manifest: ToolManifest): Promise<void>;
}

/** One line about what a manifest requests (the upper bound of its grants). */
export function capabilitySummary(m: ToolManifest): string {
  const c = m.capabilities ?? {};
  const parts: string[] = [];
  for (const f of c.fetch ?? []) parts.push(`fetch ${f.access} ${f.origin}`);
  if (c.storage) parts.push('storage');
  for (const s of c.secrets ?? []) parts.push(`secret ${s}`);
  if (c.subtasks) parts.push('subtasks');
  if (c.resolveInvocation?.length) parts.push(`invocation lookup (${c.resolveInvocation.join(', ')})`);
  return parts.length ? `Requests: ${parts.join('; ')}` : 'Requests no capabilities';
}

/**
 * Warnings for the fetch origins of `m` the host will always refuse (judgeFetchOrigin: the mediated fetch's own
 * rule), e.g. "tools cannot reach 127.0.0.1: a request there is always refused (127.0.0.1 is a loopback address)".
 */
export function fetchWarnings(m: ToolManifest): string[] {
  const out: string[] = [];
  for (const f of m.capabilities?.fetch ?? []) {
    const v = judgeFetchOrigin(f.origin);
    if (!v.ok)
      out.push(
        `tools cannot reach ${v.host}: a request there is always refused (${v.message.replace(/^refused target: /, '')})`,
      );
  }
  return out;
}

function errorText(e: unknown): string {
  // a source with imports: the app adds one module as it is and cannot bundle files or packages
  const imported =
    isTyError(e) && e.code === 'E_INVALID_MANIFEST' && typeof e.data?.import === 'string' ? e.data.import : undefined;
  if (imported !== undefined) {
    return (
      `${(e as TyError).code}: the source imports "${imported.slice(0, 80)}"; this app adds a tool ` +
      `as one module and cannot bundle its files or packages. Bundle it with \`tycli tool add FOLDER\`, ` +
      `then paste the "manifest" that \`tycli --json tool show NAME\` prints into the box above.`
    );
  }
  return isTyError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
}

/** The JavaScript engines a revision may name (protocol/manifest.ts execution.engine), as the panel offers them. */
export const ENGINE_CHOICES: readonly { value: 'node' | 'quickjs'; label: string }[] = [
  { value: 'node', label: 'node: V8 in a browser worker (the default)' },
  { value: 'quickjs', label: 'quickjs: QuickJS in WebAssembly, exact memory and time limits' },
];

/**
 * The manifest with `execution.engine` set to `engine` (part of the revision), or unchanged for '' (as the manifest
 * says) and for what is not sandboxed JavaScript.
 */
export function withEngine(raw: unknown, engine: string): unknown {
  if (engine === '' || raw === null || typeof raw !== 'object') return raw;
  const exec = (raw as { execution?: Record<string, unknown> }).execution;
  if (!exec || exec.kind !== 'sandboxed-code' || exec.runtime !== 'javascript') return raw;
  return { ...(raw as object), execution: { ...exec, engine } };
}

/** Read a manifest from JSON text, inlining `execution.sourceFile` from `files` (by file name) when given. */
export function manifestFromInput(text: string, files: Map<string, string> = new Map()): unknown {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(`the manifest is not JSON: ${(e as Error).message}`);
  }
  const m = raw as { execution?: { sourceFile?: unknown; source?: unknown } };
  if (m && typeof m === 'object' && m.execution && typeof m.execution.sourceFile === 'string') {
    const name = m.execution.sourceFile.split('/').pop()!;
    const src = files.get(name);
    if (src === undefined)
      throw new Error(`the manifest names the source file "${name}"; select it together with the manifest`);
    const { sourceFile: _f, ...rest } = m.execution;
    void _f;
    return { ...(raw as object), execution: { ...rest, source: src } };
  }
  return raw;
}

/** Builds the panel; `refresh()` re-reads the registry. */
export function toolsPanel(d: ToolsPanelDeps): HTMLElement {
  const list = h('div', { class: 'tool-list' });
  const status = h('p', { role: 'status', class: 'tools-status' });
  const say = (t: string) => (status.textContent = t);

  const manifestBox = h('textarea', {
    rows: 6,
    spellcheck: 'false',
    placeholder:
      '{"name": "...", "description": "...", "parameters": {...}, "execution": {"kind": "sandboxed-code", "runtime": "javascript", "source": "export default async (args) => ..."}}',
  });
  const files = h('input', { type: 'file', multiple: true, accept: '.json,.mjs,.js,.py' });
  const readFiles = async (): Promise<{ text: string; files: Map<string, string> } | undefined> => {
    const list = Array.from(files.files ?? []);
    const texts = new Map<string, string>();
    for (const f of list) texts.set(f.name, await f.text());
    const manifestFile = list.find((f) => f.name.endsWith('.json'));
    return manifestFile ? { text: texts.get(manifestFile.name)!, files: texts } : undefined;
  };
  const engineSelect = h(
    'select',
    {},
    h('option', { value: '' }, 'As the manifest says'),
    ...ENGINE_CHOICES.map((c) => h('option', { value: c.value }, c.label)),
  );
  const input = async (): Promise<unknown> => {
    const fromFiles = manifestBox.value.trim() ? undefined : await readFiles();
    const raw = fromFiles ? manifestFromInput(fromFiles.text, fromFiles.files) : manifestFromInput(manifestBox.value);
    return withEngine(raw, engineSelect.value);
  };
  const add = h('button', { type: 'button' }, 'Add tool');
  add.addEventListener('click', async () => {
    try {
      const r = await d.registry.install(await input());
      const warn = fetchWarnings(r.manifest);
      say(
        (r.activated
          ? `Added ${r.manifest.name} @${shortId(r.revision)}.`
          : `Stored ${r.manifest.name} @${shortId(r.revision)}; the name is bound to another revision: activate it below.`) +
          (warn.length ? ` Warning: ${warn.join('; ')}.` : ''),
      );
      manifestBox.value = '';
      files.value = '';
      await refresh();
    } catch (e) {
      say(`Not added: ${errorText(e)}`);
    }
  });
  const define = h('button', { type: 'button' }, 'Define in this conversation');
  define.addEventListener('click', async () => {
    try {
      const m = parseManifest(await input());
      await d.defineInConversation(m);
      say(`${m.name} is defined in this conversation from here on (not installed).`);
      manifestBox.value = '';
    } catch (e) {
      say(`Not defined: ${errorText(e)}`);
    }
  });

  const toolCard = async (name: string, active: string, revisions: string[]): Promise<HTMLElement> => {
    const { manifest } = await d.registry.resolve(`${name}@${active}`);
    const offer = h('input', { type: 'checkbox' });
    offer.checked = !d.disabled.has(name);
    offer.addEventListener('change', async () => {
      if (offer.checked) d.disabled.delete(name);
      else d.disabled.add(name);
      await d.saveDisabled();
    });
    const editor = h('div', { class: 'editor', hidden: true });
    const exec = manifest.execution;
    const editBtn = h('button', { type: 'button', disabled: exec.kind !== 'sandboxed-code' }, 'Edit source');
    editBtn.addEventListener('click', () => {
      if (exec.kind !== 'sandboxed-code') return;
      editor.hidden = !editor.hidden;
      if (editor.hidden) return;
      const src = h('textarea', { rows: 12, spellcheck: 'false', 'aria-label': `Source of ${name}` });
      src.value = exec.source;
      const save = h('button', { type: 'button' }, 'Save as new revision');
      const out = h('div', { class: 'new-revision' });
      save.addEventListener('click', async () => {
        try {
          const next = { ...manifest, execution: { ...exec, source: src.value } };
          const r = await d.registry.install(next);
          if (r.revision === active) {
            say('The source is unchanged: same revision.');
            return;
          }
          const diff = h('pre', { class: 'diff', 'aria-label': `Changes in ${name} @${shortId(r.revision)}` });
          for (const l of lineDiff(exec.source, src.value))
            if (l.op !== ' ') diff.append(h('span', { class: l.op === '+' ? 'add' : 'del' }, `${l.op} ${l.text}\n`));
          const activate = h('button', { type: 'button', class: 'primary' }, 'Activate');
          activate.addEventListener('click', async () => {
            await d.registry.activate(name, r.revision, { approveReplacement: true });
            await refresh();
            say(`${name} now runs revision @${shortId(r.revision)}; it starts with no grants and no settings.`);
          });
          replaceChildren(
            out,
            h(
              'p',
              {},
              `New revision @${shortId(r.revision)} stored, not active. Calls by name still run @${shortId(active)} until you activate it; a new revision starts with no grants.`,
            ),
            diff,
            activate,
          );
        } catch (e) {
          replaceChildren(out, h('p', { role: 'alert' }, `Not saved: ${errorText(e)}`));
        }
      });
      replaceChildren(editor, src, save, out);
    });
    // The engine is part of the revision: another engine is another revision, stored and then activated.
    const engine = exec.kind === 'sandboxed-code' ? (exec.engine ?? 'node') : undefined;
    let engineRow: HTMLElement | null = null;
    if (exec.kind === 'sandboxed-code' && exec.runtime === 'javascript') {
      const pick = h(
        'select',
        { 'aria-label': `Engine of ${name}` },
        ...ENGINE_CHOICES.map((c) => h('option', { value: c.value }, c.value)),
      );
      pick.value = engine === 'quickjs' ? 'quickjs' : 'node';
      const saveEngine = h('button', { type: 'button', disabled: true }, 'Save on this engine');
      const engineOut = h('div', { class: 'new-revision' });
      pick.addEventListener('change', () => {
        saveEngine.disabled = pick.value === (engine === 'quickjs' ? 'quickjs' : 'node');
      });
      saveEngine.addEventListener('click', async () => {
        try {
          const r = await d.registry.install(withEngine(manifest, pick.value));
          const activate = h('button', { type: 'button', class: 'primary' }, `Activate ${name} on ${pick.value}`);
          activate.addEventListener('click', async () => {
            await d.registry.activate(name, r.revision, { approveReplacement: true });
            await refresh();
            say(`${name} now runs revision @${shortId(r.revision)} on ${pick.value}; it starts with no grants.`);
          });
          replaceChildren(
            engineOut,
            h(
              'p',
              {},
              `Revision @${shortId(r.revision)} on ${pick.value} stored, not active: calls by name still run @${shortId(active)}.`,
            ),
            activate,
          );
        } catch (e) {
          replaceChildren(engineOut, h('p', { role: 'alert' }, `Not saved: ${errorText(e)}`));
        }
      });
      engineRow = h(
        'div',
        { class: 'engine', role: 'group', 'aria-label': `Engine choice for ${name}` },
        h('span', {}, 'Engine '),
        pick,
        ' ',
        saveEngine,
        engineOut,
      );
    }
    const remove = h('button', { type: 'button' }, 'Remove');
    remove.addEventListener('click', () => {
      const confirm = h('button', { type: 'button', class: 'deny' }, `Remove ${name}`);
      const cancel = h('button', { type: 'button' }, 'Cancel');
      const box = h(
        'p',
        { role: 'group', 'aria-label': `Confirm removing ${name}` },
        `Remove ${name}? The model will no longer see it; its revisions stay stored, so conversations that called it keep their pinned code.`,
        ' ',
        confirm,
        ' ',
        cancel,
      );
      cancel.addEventListener('click', () => box.remove());
      confirm.addEventListener('click', async () => {
        try {
          await d.registry.remove(name, { approveRemoval: true });
          await refresh();
          say(`Removed ${name}.`);
        } catch (e) {
          say(`Not removed: ${errorText(e)}`);
        }
      });
      card.append(box);
    });
    // A secret the revision requests is readable by it only after the person grants it to this exact revision.
    const secretRows = await Promise.all(
      (manifest.capabilities?.secrets ?? []).map(async (secret) => {
        const granted = (await d.grants.grantsOf(secret)).some((g) => g.revision === active && g.origins.length === 0);
        const b = h(
          'button',
          { type: 'button', 'aria-label': `${granted ? 'Revoke' : 'Grant'} secret ${secret} to ${name}` },
          granted ? `Revoke ${secret}` : `Grant ${secret}`,
        );
        b.addEventListener('click', async () => {
          if (granted) await d.grants.revoke(secret, name, active);
          else await d.grants.grant(secret, { tool: name, revision: active, origins: [] });
          await refresh();
          say(
            granted
              ? `${name} @${shortId(active)} can no longer read ${secret}.`
              : `${name} @${shortId(active)} may read ${secret} (this revision only).`,
          );
        });
        return h('li', {}, h('code', {}, secret), granted ? ' granted to this revision ' : ' not granted ', b);
      }),
    );
    const others = revisions.filter((r) => r !== active);
    const settings = manifest.settings && d.tools ? await settingsForm(d.tools, name, active, others, say) : null;
    const card = h(
      'article',
      { class: 'tool', 'aria-label': name },
      h(
        'h3',
        {},
        name,
        ' ',
        h('code', { title: active }, `@${shortId(active)}`),
        exec.kind === 'sandboxed-code'
          ? ` · ${exec.runtime}${exec.runtime === 'javascript' ? ` on ${engine}` : ''}`
          : ` · ${exec.kind}`,
      ),
      h('p', {}, manifest.description.length > 240 ? `${manifest.description.slice(0, 240)}…` : manifest.description),
      h('p', { class: 'caps' }, capabilitySummary(manifest)),
      ...fetchWarnings(manifest).map((w) => h('p', { class: 'warning', role: 'note' }, `Warning: ${w}.`)),
      secretRows.length ? h('ul', { class: 'secret-grants', 'aria-label': `Secrets of ${name}` }, ...secretRows) : null,
      settings,
      engineRow,
      h('label', { class: 'check' }, offer, ` Offer ${name} to the model`),
      h('div', { class: 'tool-buttons' }, editBtn, ' ', remove),
      others.length
        ? h(
            'details',
            {},
            h('summary', {}, `Other revisions (${others.length})`),
            h(
              'ul',
              {},
              ...others.map((rev) =>
                h(
                  'li',
                  {},
                  h('code', { title: rev }, `@${shortId(rev)}`),
                  ' ',
                  h(
                    'button',
                    {
                      type: 'button',
                      'aria-label': `Activate ${name} @${shortId(rev)}`,
                      onclick: async () => {
                        await d.registry.activate(name, rev, { approveReplacement: true });
                        await refresh();
                      },
                    },
                    'Activate',
                  ),
                ),
              ),
            ),
          )
        : null,
      editor,
    );
    return card;
  };

  const refresh = async () => {
    const cards: HTMLElement[] = [];
    for (const b of await d.registry.list()) {
      if (!b.active) continue;
      try {
        cards.push(await toolCard(b.name, b.active, b.revisions));
      } catch (e) {
        cards.push(h('article', { class: 'tool' }, h('h3', {}, b.name), h('p', { role: 'alert' }, errorText(e))));
      }
    }
    replaceChildren(list, ...(cards.length ? cards : [h('p', {}, 'No tools installed.')]));
  };
  void refresh();
  return h(
    'section',
    { class: 'panel tools', 'aria-label': 'Tools' },
    h('h2', {}, 'Tools'),
    status,
    list,
    h('h3', {}, 'Add a tool'),
    h('label', { class: 'field' }, h('span', { class: 'label' }, 'Tool manifest (JSON)'), manifestBox),
    h(
      'label',
      { class: 'field' },
      h('span', { class: 'label' }, 'JavaScript engine'),
      engineSelect,
      h('small', {}, 'Part of the revision. quickjs: for untrusted, small tools; node: for heavy computation.'),
    ),
    h(
      'label',
      { class: 'field' },
      h('span', { class: 'label' }, 'Manifest files'),
      files,
      h('small', {}, 'A manifest.json and the source file it names (execution.sourceFile).'),
    ),
    h('div', {}, add, ' ', define),
  );
}
