// dependency-cruiser rules: the layers (protocol <- core <- hosts), the guest runtime imports nothing, no import
// cycles, product code never imports test/, the host never imports its command line. Run by `npm run lint` (and CI).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'Import cycles make a module unreadable on its own; move what both need to a third file.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'protocol-is-pure-data',
      severity: 'error',
      comment: 'protocol/ holds zod schemas and types only.',
      from: { path: '^protocol/' },
      to: { pathNot: ['^protocol/', '^node_modules/zod/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'core-imports-protocol-and-core-only',
      severity: 'error',
      comment: 'core/ is host-agnostic: it builds on protocol/ and its own libraries, never on a host.',
      from: { path: '^core/', pathNot: '\\.test\\.ts$' },
      to: { path: '^(node|browser|test|tools|bin)/' },
    },
    {
      name: 'core-and-protocol-never-import-node-builtins',
      severity: 'error',
      comment: 'core/ and protocol/ run in the browser as well: no node:* module.',
      from: { path: '^(core|protocol)/', pathNot: '\\.test\\.ts$' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'guest-imports-nothing',
      severity: 'error',
      comment: 'core/guest/ runs inside every sandbox; it gets what it needs as arguments and imports nothing.',
      from: { path: '^core/guest/', pathNot: '\\.test\\.ts$' },
      to: { pathNot: '^core/guest/' },
    },
    {
      name: 'hosts-apart',
      severity: 'error',
      comment: 'No browser/ file imports from node/, and no node/ file from browser/ (both build on core/).',
      from: { path: '^browser/', pathNot: '\\.test\\.ts$' },
      to: { path: '^node/' },
    },
    {
      name: 'node-never-imports-browser',
      severity: 'error',
      from: { path: '^node/', pathNot: '\\.test\\.ts$' },
      to: { path: '^browser/(?!build/)' },
    },
    {
      name: 'product-never-imports-test',
      severity: 'error',
      comment: 'Product code never imports test/ (a unit test beside its file may use test helpers).',
      from: { path: '^(core|node|browser|protocol|tools|bin)/', pathNot: '\\.test\\.ts$' },
      to: { path: '^test/' },
    },
    {
      name: 'host-never-imports-cli',
      severity: 'error',
      comment: 'The Node host and its parts serve every front end; only node/cli/ knows the command line.',
      from: { path: '^node/', pathNot: ['^node/cli/', '\\.test\\.ts$'] },
      to: { path: '^node/cli/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^dist/', 'node_modules', '^test/conformance/'] },
    // TypeScript 7 has no JavaScript API for dependency-cruiser to parse with; swc parses the sources (types included).
    parser: 'swc',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.mts', '.js', '.mjs', '.cjs', '.d.ts'],
    },
    moduleSystems: ['es6', 'cjs'],
  },
};
