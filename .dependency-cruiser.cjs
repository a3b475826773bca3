// The import rules of the house (docs/architecture.md). Imports flow one way:
//   main/cli → app.ts → http/ → modules/index.ts → modules/<m>/ → platform/, db/, lib/
// `npm run lint` runs this (with the file-length rule in .oxlintrc.json); a change that breaks a rule fails CI.
// Parser: swc (@swc/core). TypeScript 7 has no JavaScript API, and dependency-cruiser's own TypeScript
// parser needs TypeScript < 7; swc reads our .ts files, type-only imports included.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Files that import each other in a loop can only be understood, and moved, together.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'lib-imports-nothing-of-ours',
      comment: 'lib/ holds pure helpers: they import other lib/ files and packages, nothing else of the project.',
      severity: 'error',
      from: { path: '^src/lib/' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'platform-knows-no-module',
      comment: 'platform/ is what every module stands on: it imports lib/ and db/, never a module, http/ or the entry files.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/', pathNot: '^src/(platform|lib|db)/' },
    },
    {
      name: 'db-knows-only-tables',
      comment: 'db/ is the database: its schema is the union of every module\'s tables.ts, and it knows nothing else of a module.',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: '^src/', pathNot: '^src/(platform|lib|db)/|^src/modules/[^/]+/tables\\.ts$' },
    },
    {
      name: 'tables-are-leaves',
      comment: 'A module\'s tables.ts declares row types only, so db/schema.ts can gather them without pulling in services.',
      severity: 'error',
      from: { path: '^src/modules/[^/]+/tables\\.ts$' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'modules-stay-below-http',
      comment: 'A module answers through its actions; it never imports http/, the registry or the entry files.',
      severity: 'error',
      from: { path: '^src/modules/[^/]+/' },
      to: { path: '^src/(http/|modules/index\\.ts$|app\\.ts$|services\\.ts$|main\\.ts$|cli\\.ts$|bootstrap\\.ts$|primary\\.ts$|first-admin-notice\\.ts$)' },
    },
    {
      name: 'no-foreign-api-or-tables',
      comment: 'A module calls another module\'s service (or listens to its events); its actions and its tables are its own.',
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/(api|tables)\\.ts$', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'http-knows-modules-through-the-registry',
      comment: 'http/ serves whatever the registry lists: it imports platform/, lib/ and modules/index.ts, never a module directly.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/', pathNot: '^src/(http|platform|lib)/|^src/modules/index\\.ts$|^src/config\\.ts$' },
    },
    {
      name: 'config-is-a-leaf',
      comment: 'Settings from the environment are read before anything is built; config.ts imports only lib/ and platform/.',
      severity: 'error',
      from: { path: '^src/config\\.ts$' },
      to: { path: '^src/', pathNot: '^src/(lib|platform)/' },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
  },
};
