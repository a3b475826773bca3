// The tests Stryker runs (npm run mutate, see stryker.config.mjs): for MUTATE_TARGET, only the test files written
// for the mutated module, on SQLite. Not part of `npm test`. Plain JavaScript so that stryker.config.mjs can import
// the table below under Node 20 (which cannot import TypeScript).
import { defineConfig } from 'vitest/config';

/** @type {Record<string, { mutate: string, tests: string[] }>} */
export const MUTATE_TARGETS = {
  auth: {
    mutate: 'src/http/auth.ts',
    tests: ['test/core-auth.test.ts', 'test/core-auth-sessions.test.ts', 'test/core-csrf.test.ts', 'test/core-ratelimit.test.ts'],
  },
  money: { mutate: 'src/lib/money.ts', tests: ['test/selling-money.test.ts'] },
  cache: {
    mutate: 'src/modules/serviceapikey/cache.ts',
    tests: ['test/apikey-cache.test.ts', 'test/apikey-api.test.ts', 'test/apikey-client-status.test.ts'],
  },
  pricing: { mutate: 'src/lib/usage-pricing.ts', tests: ['test/usage-pricing.test.ts', 'test/mutate-pricing.test.ts'] },
  promos: { mutate: 'src/modules/product/promos.ts', tests: ['test/mutate-promos.test.ts', 'test/billing-coupons.test.ts', 'test/billing-properties.test.ts'] },
  proration: { mutate: 'src/lib/proration.ts', tests: ['test/mutate-proration.test.ts', 'test/billing-properties.test.ts'] },
  selfservice: {
    mutate: 'src/modules/order/self-service.ts',
    tests: ['test/mutate-selfservice.test.ts', 'test/billing-selfservice.test.ts', 'test/billing-renewal-guard.test.ts', 'test/billing-proration-credit.test.ts'],
  },
};

export default defineConfig({
  test: {
    include: MUTATE_TARGETS[process.env.MUTATE_TARGET ?? '']?.tests ?? Object.values(MUTATE_TARGETS).flatMap((target) => target.tests),
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
