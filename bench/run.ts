// `npm run bench`: every benchmark, one after another, each beside its bare-Fastify baseline in the same run.
// `npm run bench -- core` (or selling, check) runs one.
import { runCheckBench } from './check.ts';
import { runCoreBench } from './core.ts';
import { runSellingBench } from './selling.ts';
import { runSdkBench } from './sdk.ts';

const suites: Record<string, () => Promise<unknown>> = {
  core: () => runCoreBench(),
  selling: () => runSellingBench(),
  check: () => runCheckBench(),
  sdk: () => runSdkBench(),
};

const wanted = process.argv.slice(2);
for (const [name, run] of Object.entries(suites)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  process.stdout.write(`\n### ${name}\n`);
  await run();
}
