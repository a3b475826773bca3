import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    pool: 'forks',
    // Migrates one template database per run, with the fixture administrator; each test file opens a copy of it.
    globalSetup: ['test/helpers/template-database.ts'],
    // Tests share one PostgreSQL server in CI; each file gets its own database, so files may run in parallel.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
