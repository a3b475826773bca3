import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    pool: 'forks',
    // A worker loads the code once for all the files it runs: loading it was most of a file's start-up (~2.5 s).
    // Each file still builds its own app on its own database copy and Redis prefix, so files share no state.
    isolate: false,
    // Two files at a time: most of a file's time is spent waiting (timers, sockets, child processes, Chromium), so two
    // workers keep this 2-core machine busy; Vitest's default here would be one. Measured in docs/development.md.
    maxWorkers: 2,
    // Migrates one template database per run, with the fixture administrator; each test file opens a copy of it.
    globalSetup: ['test/helpers/template-database.ts'],
    // Tests share one PostgreSQL server in CI; each file gets its own database, so files may run in parallel.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
