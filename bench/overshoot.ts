// How far past a limit the batched key-check counters let a client go (src/platform/counters/batched.ts): P processes (here,
// P counter stores in one process, each with its own Redis connection and its own 200 ms sync) share one limit on
// the shared Redis; a client sends to all of them at a steady rate until every one refuses. Reported: calls allowed
// beyond the limit, for a few rates. BENCH_REDIS_URL names the Redis (default: the shared one of HELPERS.md).
import { randomBytes } from 'node:crypto';
import { BatchedCounterStore, RedisCounterBackend } from '../src/platform/counters/batched.ts';
import { REDIS_SERVER } from './process.ts';

async function measure(processes: number, perProcessPerSecond: number, limit: number): Promise<number> {
  const prefix = `bench:overshoot:${randomBytes(4).toString('hex')}:`;
  const stores = Array.from({ length: processes }, () => new BatchedCounterStore(new RedisCounterBackend(REDIS_SERVER, prefix), () => undefined));
  await Promise.all(stores.map((store) => store.ready(2000)));
  let allowed = 0;
  const tickMs = 10;
  const perTick = Math.max(1, Math.round((perProcessPerSecond * tickMs) / 1000));
  // Long enough for the slowest rate to reach the limit and be refused for a while.
  const ticks = Math.ceil(((limit / (processes * perProcessPerSecond)) * 1000 + 1500) / tickMs);
  for (let tick = 0; tick < ticks; tick++) {
    for (const store of stores) {
      for (let i = 0; i < perTick; i++) if (store.incr('API_KEY_CHECK:198.51.100.1', 60_000).count <= limit) allowed++;
    }
    await new Promise((resolve) => setTimeout(resolve, tickMs));
  }
  for (const store of stores) await store.close();
  return allowed - limit;
}

export async function runOvershootBench(): Promise<void> {
  const limit = 1000;
  process.stdout.write(`\nRate-limit overshoot of the batched check counters (limit ${limit}/60 s, sync every 200 ms)\n`);
  for (const processes of [1, 2, 4]) {
    for (const rate of [100, 1000, 5000]) {
      const over = await measure(processes, rate, limit);
      process.stdout.write(`  ${processes} process(es) × ${String(rate).padStart(4)} calls/s each: ${String(over).padStart(5)} calls over the limit (${((over / limit) * 100).toFixed(1)}%)\n`);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runOvershootBench();
