// Security contract: guest code touches no global it did not capture. Every core/guest file and the hosts' entry
// points (Node, Deno, browser worker), parsed with acorn, their free identifiers resolved scope by scope; trusted side
// (reads the files, runs nothing of them).
// The rule (core/guest/commons.mjs): only commons.mjs's top level reads globals (the explicit list CAPTURED below);
// no function of the guest runtime or of an entry point reads one, since tool code may have replaced it by the time
// the function runs; an entry point reads at its top level only globals of its own host (the lists in ENTRY_POINTS),
// never one commons.mjs captures. Functions do not iterate with the iteration protocol either (for-of, array spread
// or destructuring read Array.prototype[Symbol.iterator] when they run). And the one classic script the Node entry and
// the browser build make of each guest module is the same text on both hosts.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parse } from 'acorn';
import { describe, expect, it } from 'vitest';
import { commonsSource, guestModuleSource } from '../../browser/sandbox/runtime.js';
import { commonsAsScript, moduleAsScript, QUICKJS_GUEST_FILES } from '../../core/quickjs/guest-script.js';

/** The globals commons.mjs reads when it loads: each new one is a reviewed addition to this list. */
const CAPTURED = [
  'globalThis',
  'Reflect',
  'Object',
  'Function',
  'JSON',
  'Number',
  'Math',
  'Date',
  'Symbol',
  'String',
  'RegExp',
  'encodeURIComponent',
  'Array',
  'Map',
  'Set',
  'Promise',
  'Error',
  'TypeError',
  'RangeError',
  'ArrayBuffer',
  'Uint8Array',
  'TextDecoder',
  'TextEncoder',
  'atob',
  'btoa',
  'EventTarget',
  'URL',
  'WebAssembly',
];
/** Globals any function may read: non-writable, non-configurable properties of the global object. */
const CONSTANTS = ['undefined', 'NaN', 'Infinity'];

/** The hosts' entry points: the names in scope around each file, and the host's own globals its top level may read. */
const ENTRY_POINTS: Record<string, { sourceType: 'module' | 'script'; outer: string[]; hostGlobals: string[] }> = {
  // compiled by sandbox-runner-entry.cjs after commons.mjs, core.mjs (and python.mjs), in a function of these
  '../../node/runner/sandbox-runner.cjs': {
    sourceType: 'script',
    outer: ['createGuest', 'createPythonGuest', 'require', '__dirname', 'entryImport'],
    hostGlobals: ['process', 'Buffer', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'setImmediate'],
  },
  // an ES module: imports commons.mjs and core.mjs itself
  '../../node/runner/sandbox-runner.mjs': {
    sourceType: 'module',
    outer: [],
    hostGlobals: ['setInterval'],
  },
  // the end of each QuickJS sandbox's one script (core/quickjs/guest-script.ts), after the web globals QuickJS lacks
  // (`web`), commons.mjs and core.mjs, in a function of the sandbox's host functions `H`; it reads no host global
  '../../core/guest/quickjs/entry.js': {
    sourceType: 'script',
    outer: ['createGuest', 'H', 'web'],
    hostGlobals: [],
  },
  // the end of the worker's one script (browser/sandbox/runtime.ts), after commons.mjs, core.mjs and python.mjs
  '../../browser/sandbox/worker-bootstrap.js': {
    sourceType: 'script',
    outer: ['createGuest', 'createPythonGuest'],
    hostGlobals: ['Blob', 'MessagePort'],
  },
};

interface Ref {
  name: string;
  line: number;
  /** inside a function (runs whenever it is called, possibly after tool code), not at the file's top level */
  inFunction: boolean;
}
interface Analysis {
  /** identifiers that resolve to no declaration in the file nor to `outer`: globals */
  free: Ref[];
  /** uses of the iteration protocol inside functions: `for-of`, `[...x]`, `f(...x)`, `[a] = x` */
  iterations: { what: string; line: number }[];
  imports: { from: string; names: string[] }[];
  /** names of `export const` / `export function` declarations */
  exports: string[];
  /** names declared at the top level (Program scope) */
  topLevel: string[];
}

type Node = { type: string; loc: { start: { line: number } }; [key: string]: unknown };
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && typeof (v as Node).type === 'string';
const kids = (n: Node, key: string): Node[] => (n[key] as (Node | null)[]).filter(isNode);

class Scope {
  readonly names = new Set<string>();
  constructor(readonly parent: Scope | undefined) {}
  has(name: string): boolean {
    return this.names.has(name) || (this.parent?.has(name) ?? false);
  }
}

/** Names a binding pattern declares (`a`, `{ a, b: [c] }`, `...d`, `e = 1`). */
function boundNames(p: Node, out: string[] = []): string[] {
  switch (p.type) {
    case 'Identifier':
      out.push(p.name as string);
      break;
    case 'ObjectPattern':
      for (const prop of kids(p, 'properties'))
        boundNames((prop.type === 'RestElement' ? prop : prop.value) as Node, out);
      break;
    case 'ArrayPattern':
      for (const e of kids(p, 'elements')) boundNames(e, out);
      break;
    case 'RestElement':
      boundNames(p.argument as Node, out);
      break;
    case 'AssignmentPattern':
      boundNames(p.left as Node, out);
      break;
  }
  return out;
}

/** Declare a statement list's block-scoped names (let, const, class, function, import) in `scope`. */
function declareBlock(stmts: Node[], scope: Scope): void {
  for (const s of stmts) {
    const d = s.type === 'ExportNamedDeclaration' && isNode(s.declaration) ? s.declaration : s;
    if (d.type === 'VariableDeclaration' && d.kind !== 'var')
      for (const v of kids(d, 'declarations')) for (const n of boundNames(v.id as Node)) scope.names.add(n);
    if ((d.type === 'FunctionDeclaration' || d.type === 'ClassDeclaration') && isNode(d.id))
      scope.names.add(d.id.name as string);
    if (d.type === 'ImportDeclaration')
      for (const sp of kids(d, 'specifiers')) scope.names.add((sp.local as Node).name as string);
  }
}

/** Declare the `var`s of a function body or program (through blocks, not into nested functions) in `scope`. */
function hoistVars(n: Node, scope: Scope): void {
  if (/Function/.test(n.type)) return;
  if (n.type === 'VariableDeclaration' && n.kind === 'var')
    for (const v of kids(n, 'declarations')) for (const name of boundNames(v.id as Node)) scope.names.add(name);
  for (const key of Object.keys(n)) {
    const v = n[key];
    if (Array.isArray(v)) for (const c of v) if (isNode(c)) hoistVars(c, scope);
    if (isNode(v)) hoistVars(v, scope);
  }
}

/** Parse `source` and resolve every identifier it reads; `outer`: names in scope around the file. */
function analyze(source: string, sourceType: 'module' | 'script', outer: Iterable<string> = []): Analysis {
  const ast = parse(source, { ecmaVersion: 'latest', sourceType, locations: true }) as unknown as Node;
  const out: Analysis = { free: [], iterations: [], imports: [], exports: [], topLevel: [] };
  const root = new Scope(undefined);
  for (const n of outer) root.names.add(n);
  const program = new Scope(root);
  const body = kids(ast, 'body');
  hoistVars(ast, program);
  declareBlock(body, program);
  out.topLevel = [...program.names];

  const ref = (id: Node, scope: Scope, inFunction: boolean) => {
    const name = id.name as string;
    if (!scope.has(name)) out.free.push({ name, line: id.loc.start.line, inFunction });
  };
  const iteration = (what: string, n: Node, inFunction: boolean) => {
    if (inFunction) out.iterations.push({ what, line: n.loc.start.line });
  };
  /** The expressions inside a binding pattern (defaults, computed keys); its names are declarations, not reads. */
  const patternExprs = (p: Node, scope: Scope, inFn: boolean): void => {
    if (p.type === 'ObjectPattern')
      for (const prop of kids(p, 'properties')) {
        if (prop.type === 'RestElement') patternExprs(prop.argument as Node, scope, inFn);
        else {
          if (prop.computed) visit(prop.key as Node, scope, inFn);
          patternExprs(prop.value as Node, scope, inFn);
        }
      }
    else if (p.type === 'ArrayPattern') {
      iteration('array destructuring', p, inFn);
      for (const e of kids(p, 'elements')) patternExprs(e, scope, inFn);
    } else if (p.type === 'RestElement') patternExprs(p.argument as Node, scope, inFn);
    else if (p.type === 'AssignmentPattern') {
      patternExprs(p.left as Node, scope, inFn);
      visit(p.right as Node, scope, inFn);
    }
  };
  /** An assignment target: its identifiers are writes to existing bindings (a global's too). */
  const target = (p: Node, scope: Scope, inFn: boolean): void => {
    if (p.type === 'Identifier') ref(p, scope, inFn);
    else if (p.type === 'ObjectPattern')
      for (const prop of kids(p, 'properties')) {
        if (prop.type === 'RestElement') target(prop.argument as Node, scope, inFn);
        else {
          if (prop.computed) visit(prop.key as Node, scope, inFn);
          target(prop.value as Node, scope, inFn);
        }
      }
    else if (p.type === 'ArrayPattern') {
      iteration('array destructuring', p, inFn);
      for (const e of kids(p, 'elements')) target(e, scope, inFn);
    } else if (p.type === 'RestElement') target(p.argument as Node, scope, inFn);
    else if (p.type === 'AssignmentPattern') {
      target(p.left as Node, scope, inFn);
      visit(p.right as Node, scope, inFn);
    } else visit(p, scope, inFn);
  };
  const fn = (n: Node, scope: Scope): void => {
    const s = new Scope(scope);
    if (n.type !== 'ArrowFunctionExpression') s.names.add('arguments');
    if (n.type === 'FunctionExpression' && isNode(n.id)) s.names.add(n.id.name as string);
    const params = kids(n, 'params');
    for (const p of params) for (const name of boundNames(p)) s.names.add(name);
    const b = n.body as Node;
    if (b.type === 'BlockStatement') {
      hoistVars(b, s);
      declareBlock(kids(b, 'body'), s);
    }
    for (const p of params) patternExprs(p, s, true);
    if (b.type === 'BlockStatement') for (const st of kids(b, 'body')) visit(st, s, true);
    else visit(b, s, true);
  };
  const visit = (n: Node, scope: Scope, inFn: boolean): void => {
    switch (n.type) {
      case 'Identifier':
        return ref(n, scope, inFn);
      case 'FunctionDeclaration':
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
        return fn(n, scope);
      case 'MemberExpression':
        visit(n.object as Node, scope, inFn);
        if (n.computed) visit(n.property as Node, scope, inFn);
        return;
      case 'Property':
      case 'MethodDefinition':
      case 'PropertyDefinition':
        if (n.computed) visit(n.key as Node, scope, inFn);
        if (isNode(n.value)) visit(n.value, scope, inFn);
        return;
      case 'ClassDeclaration':
      case 'ClassExpression': {
        const s = new Scope(scope);
        if (isNode(n.id)) s.names.add(n.id.name as string);
        if (isNode(n.superClass)) visit(n.superClass, scope, inFn);
        for (const m of kids(n.body as Node, 'body')) visit(m, s, true);
        return;
      }
      case 'BlockStatement':
      case 'StaticBlock': {
        const s = new Scope(scope);
        declareBlock(kids(n, 'body'), s);
        for (const st of kids(n, 'body')) visit(st, s, inFn);
        return;
      }
      case 'SwitchStatement': {
        visit(n.discriminant as Node, scope, inFn);
        const s = new Scope(scope);
        const cases = kids(n, 'cases');
        declareBlock(
          cases.flatMap((c) => kids(c, 'consequent')),
          s,
        );
        for (const c of cases) {
          if (isNode(c.test)) visit(c.test, s, inFn);
          for (const st of kids(c, 'consequent')) visit(st, s, inFn);
        }
        return;
      }
      case 'ForStatement':
      case 'ForInStatement':
      case 'ForOfStatement': {
        if (n.type === 'ForOfStatement') iteration('for-of', n, inFn);
        const s = new Scope(scope);
        const head = (n.type === 'ForStatement' ? n.init : n.left) as Node | null;
        if (head?.type === 'VariableDeclaration') {
          if (head.kind !== 'var') declareBlock([head], s);
          for (const v of kids(head, 'declarations')) {
            patternExprs(v.id as Node, s, inFn);
            if (isNode(v.init)) visit(v.init, s, inFn);
          }
        } else if (head) {
          if (n.type === 'ForStatement') visit(head, s, inFn);
          else target(head, s, inFn);
        }
        for (const key of ['test', 'update', 'right', 'body']) if (isNode(n[key])) visit(n[key], s, inFn);
        return;
      }
      case 'CatchClause': {
        const s = new Scope(scope);
        if (isNode(n.param)) {
          for (const name of boundNames(n.param)) s.names.add(name);
          patternExprs(n.param, s, inFn);
        }
        return visit(n.body as Node, s, inFn);
      }
      case 'VariableDeclaration':
        for (const v of kids(n, 'declarations')) {
          patternExprs(v.id as Node, scope, inFn);
          if (isNode(v.init)) visit(v.init, scope, inFn);
        }
        return;
      case 'AssignmentExpression':
        target(n.left as Node, scope, inFn);
        return visit(n.right as Node, scope, inFn);
      case 'ArrayExpression':
      case 'CallExpression':
      case 'NewExpression':
        for (const e of kids(n, n.type === 'ArrayExpression' ? 'elements' : 'arguments'))
          if (e.type === 'SpreadElement') iteration(`spread in ${n.type}`, e, inFn);
        break;
      case 'YieldExpression':
        if (n.delegate) iteration('yield*', n, inFn);
        break;
      case 'LabeledStatement':
        return visit(n.body as Node, scope, inFn);
      case 'BreakStatement':
      case 'ContinueStatement':
      case 'MetaProperty':
        return;
      case 'ImportDeclaration':
        out.imports.push({
          from: (n.source as Node).value as string,
          names: kids(n, 'specifiers').map(
            (sp) => (sp.type === 'ImportSpecifier' ? (sp.imported as Node).name : sp.type) as string,
          ),
        });
        return;
      case 'ExportNamedDeclaration':
        if (isNode(n.declaration)) {
          const d = n.declaration;
          if (d.type === 'VariableDeclaration')
            for (const v of kids(d, 'declarations')) out.exports.push(...boundNames(v.id as Node));
          else if (isNode(d.id)) out.exports.push(d.id.name as string);
          return visit(d, scope, inFn);
        }
        out.exports.push(...kids(n, 'specifiers').map((sp) => `{${(sp.exported as Node).name as string}}`));
        return;
    }
    for (const key of Object.keys(n)) {
      if (key === 'loc') continue;
      const v = n[key];
      if (Array.isArray(v)) for (const c of v) if (isNode(c)) visit(c, scope, inFn);
      if (isNode(v)) visit(v, scope, inFn);
    }
  };
  for (const st of body) visit(st, program, false);
  return out;
}

const text = (rel: string) => readFileSync(new URL(rel, import.meta.url), 'utf8');
const GUEST = '../../core/guest/';
/** Each guest module, its one export, and the sibling modules it may import. */
const GUEST_MODULES: Record<string, { fn: string; imports: string[] }> = {
  'core.mjs': { fn: 'createGuest', imports: ['./commons.mjs'] },
  'python-limits.mjs': { fn: 'createPythonLimits', imports: ['./commons.mjs'] },
  'python.mjs': { fn: 'createPythonGuest', imports: ['./commons.mjs', './python-limits.mjs'] },
};
const commons = analyze(text(`${GUEST}commons.mjs`), 'module');
/** Globals outside the allowed ones, as `name:line` (what a failure names). */
const offending = (refs: Ref[], allowed: string[]) =>
  refs.filter((r) => !allowed.includes(r.name)).map((r) => `${r.name}:${r.line}`);

describe('core/guest/commons.mjs: the one module of captured built-ins', () => {
  it('reads exactly the CAPTURED globals, at its top level only, and imports nothing', () => {
    expect(
      offending(
        commons.free.filter((r) => r.inFunction),
        CONSTANTS,
      ),
    ).toEqual([]);
    expect([...new Set(offending(commons.free, CONSTANTS).map((s) => s.split(':')[0]))].sort()).toEqual(
      [...CAPTURED].sort(),
    );
    expect(commons.imports).toEqual([]);
    expect(commons.iterations).toEqual([]);
  });

  it('exports every name it declares, as `export const` (no name of its own leaks into the one script unexported)', () => {
    expect([...commons.exports].sort()).toEqual([...commons.topLevel].sort());
    expect(commons.exports.length).toBeGreaterThan(40);
    expect(text(`${GUEST}commons.mjs`)).not.toMatch(/^export (?!const )/m);
  });
});

describe.each(Object.keys(GUEST_MODULES))('core/guest/%s', (file) => {
  const a = analyze(text(GUEST + file), 'module');
  const { fn, imports } = GUEST_MODULES[file]!;
  it('reads no global: every built-in comes from commons.mjs by name', () => {
    expect(offending(a.free, CONSTANTS)).toEqual([]);
    expect(a.imports.map((i) => i.from)).toEqual(imports);
    const missing = a.imports[0]!.names.filter((n) => !commons.exports.includes(n));
    expect(missing, 'imported names commons.mjs does not export').toEqual([]);
    for (const i of a.imports.slice(1))
      expect(i.names, `what ${file} imports from ${i.from}`).toEqual([GUEST_MODULES[i.from.slice(2)]!.fn]);
  });
  it('never iterates with the iteration protocol inside a function', () => {
    expect(a.iterations).toEqual([]);
  });
  it('has one export, its function declaration', () => {
    expect(a.exports).toEqual([fn]);
  });
});

describe.each(Object.keys(ENTRY_POINTS))('entry point %s', (file) => {
  const { sourceType, outer, hostGlobals } = ENTRY_POINTS[file]!;
  const a = analyze(text(file), sourceType, sourceType === 'script' ? [...commons.exports, ...outer] : outer);
  it('reads no global inside a function', () => {
    expect(
      offending(
        a.free.filter((r) => r.inFunction),
        CONSTANTS,
      ),
    ).toEqual([]);
    expect(a.iterations).toEqual([]);
  });
  it("reads at its top level only its host's own globals, none that commons.mjs captures", () => {
    expect(offending(a.free, [...CONSTANTS, ...hostGlobals])).toEqual([]);
    for (const i of a.imports.filter((i) => i.from.endsWith('/commons.mjs')))
      expect(i.names.filter((n) => !commons.exports.includes(n))).toEqual([]);
  });
});

describe('the one-script form of the guest modules (the Node entry and the browser build)', () => {
  const entry = createRequire(import.meta.url)('../../node/runner/sandbox-runner-entry.cjs') as {
    guestScript(text: string): string;
  };
  it.each([
    ['commons.mjs', undefined],
    ['core.mjs', 'createGuest'],
    ['python-limits.mjs', 'createPythonLimits'],
    ['python.mjs', 'createPythonGuest'],
  ])('%s: the same text on both hosts, as many lines, a classic script without import or export', (file, fn) => {
    const source = text(GUEST + file);
    const node = entry.guestScript(source);
    expect(node).toBe(fn === undefined ? commonsSource(source) : guestModuleSource(source, fn));
    expect(node.split('\n').length).toBe(source.split('\n').length);
    const a = analyze(`(function () {'use strict';\n${node}\n})`, 'script');
    expect(a.imports).toEqual([]);
    expect(a.exports).toEqual([]);
  });
});

describe('the one-script form in QuickJS sandboxes (core/quickjs/guest-script.ts)', () => {
  it('commons.mjs and core.mjs are the same text as in the browser worker (and so as in the Node entry)', () => {
    expect(commonsAsScript(text(`${GUEST}commons.mjs`))).toBe(commonsSource(text(`${GUEST}commons.mjs`)));
    expect(moduleAsScript(text(`${GUEST}core.mjs`), 'createGuest')).toBe(
      guestModuleSource(text(`${GUEST}core.mjs`), 'createGuest'),
    );
  });
  it('puts the web globals QuickJS lacks before commons.mjs, so the captured built-ins are theirs', () => {
    const files = QUICKJS_GUEST_FILES.map((f) => f.path);
    expect(files.indexOf('quickjs/install.mjs')).toBeLessThan(files.indexOf('commons.mjs'));
    expect(files.at(-1)).toBe('quickjs/entry.js');
  });
});

describe('the check finds what it is for (planted uses)', () => {
  const core = text(`${GUEST}core.mjs`);
  const python = text(`${GUEST}python.mjs`);
  const plant = (source: string, anchor: string, code: string) => {
    expect(source).toContain(anchor);
    return source.replace(anchor, `${anchor}\n${code}`);
  };
  it('JSON.parse called when a core function runs', () => {
    const a = analyze(plant(core, 'function safeString(v) {', "JSONParse('1'); JSON.parse('1');"), 'module');
    expect(offending(a.free, CONSTANTS)).toEqual([expect.stringMatching(/^JSON:\d+$/)]);
    expect(a.free[0]!.inFunction).toBe(true);
  });
  it('Array.prototype.map in a Python guest function', () => {
    const a = analyze(plant(python, 'function resetFs() {', 'Array.prototype.map.call([], String);'), 'module');
    expect(offending(a.free, CONSTANTS).map((s) => s.split(':')[0])).toEqual(['Array', 'String']);
  });
  it('a global read inside a commons.mjs function, a global at the guest core top level', () => {
    const c = analyze(
      plant(
        text(`${GUEST}commons.mjs`),
        'export const globalObject = globalThis;',
        'export const late = () => Array.isArray;',
      ),
      'module',
    );
    expect(
      offending(
        c.free.filter((r) => r.inFunction),
        CONSTANTS,
      ).map((s) => s.split(':')[0]),
    ).toEqual(['Array']);
    const top = analyze(`const JSONParse2 = JSON.parse;\n${core}`, 'module');
    expect(offending(top.free, CONSTANTS)).toEqual(['JSON:1']);
  });
  it('a shadowed name is no global; an undeclared one is, in any nested scope', () => {
    const a = analyze(
      'const JSON = 1; function f(Array, { b = Map }, ...c) { try { for (const x in c) g(x, Array, JSON, arguments); } catch (Set) { Set; } return b; }',
      'script',
    );
    expect(a.free.map((r) => r.name)).toEqual(['Map', 'g']);
  });
  it('an entry point re-capturing a commons built-in, or iterating at call time', () => {
    const file = '../../browser/sandbox/worker-bootstrap.js';
    const { outer, hostGlobals } = ENTRY_POINTS[file]!;
    const src = `const ReflectApply2 = Reflect.apply;\n${text(file)}\nfunction later(list) { for (const x of list) log(x); return [...list]; }`;
    const a = analyze(src, 'script', [...commons.exports, ...outer]);
    expect(offending(a.free, [...CONSTANTS, ...hostGlobals])).toEqual(['Reflect:1']);
    expect(a.iterations.map((i) => i.what)).toEqual(['for-of', 'spread in ArrayExpression']);
  });
});
