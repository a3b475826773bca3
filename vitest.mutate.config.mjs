// The tests Stryker runs (npm run mutate, see stryker.config.mjs): for MUTATE_TARGET, only the test files written
// for the mutated module, on SQLite. Not part of `npm test`. Plain JavaScript so that stryker.config.mjs can import
// the table below under Node 20 (which cannot import TypeScript).
import { defineConfig } from 'vitest/config';

/** @type {Record<string, { mutate: string, tests: string[] }>} */
export const MUTATE_TARGETS = {
  auth: {
    // The credential checks: authentication, the CSRF check and the login rate limits (split out of auth.ts, issue 22).
    mutate: 'src/{http/auth,http/csrf,platform/login-limits}.ts',
    tests: ['test/http/auth.test.ts', 'test/http/auth-sessions.test.ts', 'test/http/csrf.test.ts', 'test/platform/rate-limit.test.ts'],
  },
  money: { mutate: 'src/lib/money.ts', tests: ['test/lib/money.test.ts'] },
  cache: {
    mutate: 'src/modules/serviceapikey/check/cache.ts',
    tests: ['test/modules/serviceapikey/cache.test.ts', 'test/modules/serviceapikey/api.test.ts', 'test/modules/serviceapikey/client-status.test.ts'],
  },
  pricing: { mutate: 'src/lib/usage-pricing.ts', tests: ['test/lib/usage-pricing.test.ts', 'test/lib/mutate-pricing.test.ts'] },
  promos: { mutate: 'src/modules/product/promos.ts', tests: ['test/modules/product/mutate-promos.test.ts', 'test/modules/product/coupons.test.ts', 'test/lib/billing-properties.test.ts'] },
  proration: { mutate: 'src/lib/proration.ts', tests: ['test/lib/mutate-proration.test.ts', 'test/lib/billing-properties.test.ts'] },
  selfservice: {
    mutate: 'src/modules/order/self-service.ts',
    tests: ['test/modules/order/mutate-selfservice.test.ts', 'test/modules/order/self-service.test.ts', 'test/modules/invoice/renewal-guard.test.ts', 'test/modules/order/proration-credit.test.ts'],
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
