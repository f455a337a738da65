/**
 * turnstate's dependency direction (docs/architecture.md, "Layers"), checked on every test run
 * by test/build/dependencies.test.ts and by `npm run depcruise`.
 *
 * Leaves: types.ts, errors.ts and text.ts import nothing of the project; limits.ts only types; api.ts
 * (the public session API and the ports) only those and registries/ types. Arrows point at what
 * may be imported:
 *   registries <- respond <- machines, registries <- router, registries <- envelope,
 *   registries <- approvals; machines use the ports (api.ts) and never models/, stores/, router/;
 *   transports use the public session API (api.ts), never host/, machines/, stores/ or models/.
 * Only runtime.ts, index.ts and the composed apps (cli/, replay/) import across everything.
 * Heavy optional packages are loaded only by their subpath-export module, and nothing the core
 * entry (index.ts) reaches loads them.
 */

/** Modules every layer may import: the shared vocabulary. */
const LEAVES = '^src/(types|errors|limits|text)[.]ts$';

/** `from` may import only its own folder, the leaves and `also` (regex alternatives under src/). */
function only(name, comment, from, also) {
  return {
    name,
    comment,
    severity: 'error',
    from: { path: `^src/${from}` },
    to: { path: '^src/', pathNot: [`^src/${from}`, LEAVES, ...also.map((p) => `^src/${p}`)] },
  };
}

/** Optional heavy packages and the one module (a subpath export) allowed to load each. */
const HEAVY = [
  { pkg: 'better-sqlite3', module: 'src/stores/sqlite(-schema|-lock)?[.]ts$' },
  // anthropic-request.ts and anthropic-stream.ts name the SDK's types only (import type).
  { pkg: '@anthropic-ai/sdk', module: 'src/models/anthropic(-request|-stream)?[.]ts$' },
  { pkg: '(nats|@nats-io/.+)', module: 'src/(router|stores)/nats[^/]*[.]ts$' },
  { pkg: '@a2a-js/.+', module: 'src/transports/a2a/' },
  { pkg: '@modelcontextprotocol/.+', module: 'src/transports/mcp/' },
];
const heavyPath = (pkg) => `(^|/)node_modules/${pkg}/`;

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle couples its modules into one: split the shared part into its own file.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'leaves-are-leaves',
      comment: 'The leaves import nothing of the project but types.ts and text.ts (limits.ts shows values with text.ts).',
      severity: 'error',
      from: { path: LEAVES },
      to: { path: '^src/', pathNot: '^src/(types|text)[.]ts$' },
    },
    only('api-is-types-only', 'api.ts (public session API and ports) names types of the leaves and registries/ only.', 'api[.]ts$', [
      'registries/types[.]ts$',
    ]),
    only('registries-are-a-leaf', 'registries/ imports only the leaves (approval policies are data; approvals/ compiles them).', 'registries/', []),
    only('respond-uses-registries', 'respond/ is built from the registries only.', 'respond/', ['registries/']),
    only(
      'machines-use-ports-only',
      'machines/ import registries/, respond/ and the ports (api.ts), never models/, stores/, router/ or host/ concretely.',
      'machines/',
      ['registries/', 'respond/', 'api[.]ts$'],
    ),
    only('router-uses-registries', 'router/ imports only registries/.', 'router/', ['registries/']),
    only('envelope-uses-registries', 'envelope/ imports registries/ and the model port (api.ts).', 'envelope/', ['registries/', 'api[.]ts$']),
    only('approvals-use-registries', 'approvals/ compiles the policies registries/ keeps as data.', 'approvals/', ['registries/']),
    only('stores-implement-a-port', 'A store implements the store port (api.ts) and nothing else.', 'stores/', ['api[.]ts$']),
    only('models-implement-a-port', 'A model implements the model port (api.ts); the scripted model may use respond/.', 'models/', [
      'api[.]ts$',
      'respond/',
      'registries/',
    ]),
    only(
      'transports-use-the-session-api',
      'Transports use the public session API (api.ts) and the delivery rules (envelope/): never host/, machines/, stores/, models/ or the runtime internals.',
      'transports/',
      ['api[.]ts$', 'registries/', 'envelope/'],
    ),
    {
      name: 'host-executes-machines',
      comment: 'host/ runs the machines with the ports it is given: it never names a store, a model, a transport or the runtime.',
      severity: 'error',
      from: { path: '^src/host/' },
      to: { path: '^src/(stores|models|transports|cli|replay)/|^src/(runtime|index)[.]ts$' },
    },
    {
      name: 'only-apps-compose-the-runtime',
      comment: 'runtime.ts is the composition root: index.ts, cli/ and replay/ (which rebuilds a runtime) use it.',
      severity: 'error',
      from: { pathNot: '^src/(index[.]ts$|cli/|replay/)' },
      to: { path: '^src/runtime[.]ts$' },
    },
    {
      name: 'nothing-imports-the-entry',
      comment: 'index.ts is the public surface for users; project modules import the module that defines a name.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/index[.]ts$' },
    },
    ...HEAVY.map(({ pkg, module }) => ({
      name: 'heavy-only-in-subpath-export',
      comment: `${pkg} is optional: only its subpath-export module (${module}) loads it.`,
      severity: 'error',
      from: { path: '^src/', pathNot: module },
      to: { path: heavyPath(pkg) },
    })),
    ...HEAVY.map(({ pkg, module }) => ({
      name: 'core-reaches-no-heavy-package',
      comment: `Only the app (cli/) and ${module} may reach ${pkg}: the core and the other subpath exports never load it.`,
      severity: 'error',
      from: { path: '^src/', pathNot: `^src/cli/|${module}` },
      to: { path: heavyPath(pkg), reachable: true },
    })),
    {
      name: 'no-dev-dependency-in-src',
      comment:
        'src/ ships: it may not import a devDependency. A source-mode bootstrap (*.source.mjs: the build copies none) may load TypeScript through tsx.',
      severity: 'error',
      from: { path: '^src/', pathNot: '[.]source[.]mjs$' },
      to: { dependencyTypes: ['npm-dev'] },
    },
    {
      name: 'no-unresolvable',
      comment: 'Every import resolves (a typo or a missing package fails here, not at run time).',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['turnstate-source', 'import', 'types', 'node', 'default'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};
