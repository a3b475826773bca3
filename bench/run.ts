// `npm run bench`: every benchmark, one after another, each beside its bare-Fastify baseline in the same run.
// `npm run bench -- core` (or selling, check, card, search, coldstart, overshoot, sdk, instructions, ingest, dashboard) runs one; BENCH_* variables tune them (see docs/benchmarks.md).
import { runCardBench } from './card.ts';
import { runCheckBench } from './check.ts';
import { runColdStartBench } from './coldstart.ts';
import { runCoreBench } from './core.ts';
import { runDashboardBench } from './dashboard.ts';
import { ingestOptionsFromEnv, runIngestBench } from './ingest.ts';
import { runInstructionsBench } from './instructions.ts';
import { runOvershootBench } from './overshoot.ts';
import { runSearchBench } from './search.ts';
import { runSellingBench } from './selling.ts';
import { runSdkBench } from './sdk.ts';

const suites: Record<string, () => Promise<unknown>> = {
  core: () => runCoreBench(),
  selling: () => runSellingBench(),
  card: () => runCardBench(),
  overshoot: () => runOvershootBench(),
  coldstart: async () => {
    await runColdStartBench(Number(process.env.BENCH_STARTS ?? 3), true);
    await runColdStartBench(Number(process.env.BENCH_STARTS ?? 3), false);
  },
  search: () => runSearchBench(Number(process.env.BENCH_ROWS ?? 1_000_000), process.env.BENCH_DATABASES?.split(',') ?? ['sqlite', 'pg']),
  check: () =>
    runCheckBench(
      Number(process.env.BENCH_SECONDS ?? 5),
      Number(process.env.BENCH_ROUNDS ?? 3),
      process.env.BENCH_VARIANTS?.split(','),
      process.env.BENCH_RATE === undefined ? undefined : Number(process.env.BENCH_RATE),
    ),
  sdk: () => runSdkBench(),
  dashboard: () => runDashboardBench(Number(process.env.BENCH_INVOICES ?? 1_000_000), Number(process.env.BENCH_ORDERS ?? 100_000), process.env.BENCH_DATABASES?.split(',') ?? ['sqlite', 'pg']),
  ingest: () => runIngestBench(ingestOptionsFromEnv()),
  instructions: () =>
    runInstructionsBench(
      Number(process.env.BENCH_ROUNDS ?? 3),
      process.env.BENCH_VARIANTS?.split(','),
      Number(process.env.BENCH_WARM ?? 4000),
      Number(process.env.BENCH_CHECKS ?? 10_000),
    ),
};

const wanted = process.argv.slice(2);
for (const [name, run] of Object.entries(suites)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  process.stdout.write(`\n### ${name}\n`);
  await run();
}
