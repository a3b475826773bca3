// Mutation testing of the modules whose tests matter most (not part of `npm test` or CI):
//   npm run mutate                          every target, one after the other
//   MUTATE_TARGET=cache npx stryker run     one of auth | money | cache | pricing | proration | promos | selfservice
//                                           (add `--concurrency 1` on a machine shared with others)
// Each target mutates one file and runs only the tests written for it (vitest.mutate.config.mjs reads the same
// variable): every app-level test goes through src/http/auth.ts, so one combined run would re-run the whole app for
// each file's mutants.
// - TypeScript 7 has no JS compiler API: no type-checker plugin, and tsconfigFile names a file that does not exist
//   so Stryker leaves the tsconfig alone.
// - Concurrency 2: the machine is shared.
import { MUTATE_TARGETS } from './vitest.mutate.config.mjs';

const target = process.env.MUTATE_TARGET ?? '';
const chosen = MUTATE_TARGETS[target];
if (chosen === undefined) {
  throw new Error(`MUTATE_TARGET must be one of ${Object.keys(MUTATE_TARGETS).join(', ')} (npm run mutate runs them all)`);
}

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.mjs', related: false },
  mutate: [chosen.mutate],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  tsconfigFile: 'tsconfig.stryker-none.json',
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: `reports/mutation/${target}.json` },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
