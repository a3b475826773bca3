// Cold start as users meet it: milliseconds from launching `npm start` (the package.json script, as npm runs it) to
// the first answer of GET /healthz, on an installed checkout; a first start on an empty data directory (migrations,
// first administrator) and a restart on the same directory, BENCH_STARTS times each (median). Target: ≤ 1 s.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE_PORT, startTollgate } from './process.ts';

export async function runColdStartBench(starts = 3, viaNpm = true): Promise<{ firstMs: number; restartMs: number }> {
  const first: number[] = [];
  const restart: number[] = [];
  for (let i = 0; i < starts; i++) {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-cold-'));
    try {
      const env = { DATA_DIR: dataDir, DATABASE_URL: `sqlite:${join(dataDir, 'tollgate.db')}` };
      for (const list of [first, restart]) {
        const server = await startTollgate('cold', BASE_PORT + 50, env, { viaNpm });
        list.push(server.startedInMs);
        await server.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const median = (values: number[]) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const result = { firstMs: median(first), restartMs: median(restart) };
  process.stdout.write(
    `\nCold start (${viaNpm ? '`npm start`' : 'the start script without npm'}, launch → first answer, median of ${starts})\n` +
      `  first start (empty data directory)   ${result.firstMs} ms   [${first.join(', ')}]\n` +
      `  restart (existing data)              ${result.restartMs} ms   [${restart.join(', ')}]\n` +
      `  target ≤ 1000 ms → ${Math.max(result.firstMs, result.restartMs) <= 1000 ? 'met' : 'MISSED'}\n`,
  );
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runColdStartBench(Number(process.env.BENCH_STARTS ?? 3));
}
