// The SDK (issue 11), in one run: an Express app guarding a route with @tollgate/sdk's middleware (warm cache) beside
// the same app with no guard, each in its own process, loaded by autocannon in a third, the two loads alternating; a
// real Tollgate server process behind the SDK, started as `npm start` starts it, with default settings, and a
// verifier token made through the admin API (admin/staff/verifier_create). Then: uses counted by the server equal the
// requests the guarded app answered (0 lost, 0 double), and how long a revocation made through the admin API takes to
// be refused by the SDK, over 100 revocations. Targets: guarded ≥ 90% of bare; revocations refused within 1 s.
// Ports: BENCH_BASE_PORT (default 62600) + 90 for the server. Standalone: `npm run bench -- sdk`.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Tollgate } from '../packages/sdk/src/index.ts';
import { printTable, runLoad, type LoadResult } from './lib.ts';
import { adminCall, BASE_PORT, sellKey, startTollgate, treeCpuMs } from './process.ts';

interface App {
  url: string;
  child: ChildProcess;
  lines: AsyncIterableIterator<string>;
}

function startApp(mode: 'bare' | 'guarded', baseUrl: string, token: string): Promise<App> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/sdk-app.ts', mode, baseUrl, token], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return lines.next().then(({ value }) => ({ url: String(value).replace(/^listening /, ''), child, lines }));
}

/** Stops the app (the SDK reports its last uses first) and returns the 2xx answers it sent. */
async function stopApp(app: App): Promise<number> {
  app.child.kill('SIGTERM');
  const { value } = await app.lines.next();
  return Number(/answered (\d+)/.exec(String(value))?.[1]);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Sums the rounds of one side into one row (requests per second over all its seconds; worst p99). */
function combine(name: string, rounds: LoadResult[]): LoadResult {
  const mean = (pick: (row: LoadResult) => number) => Math.round(rounds.reduce((sum, row) => sum + pick(row), 0) / rounds.length);
  return {
    name,
    requestsPerSec: mean((row) => row.requestsPerSec),
    p50Ms: mean((row) => row.p50Ms),
    p99Ms: Math.max(...rounds.map((row) => row.p99Ms)),
    non2xx: rounds.reduce((sum, row) => sum + row.non2xx, 0),
    errors: rounds.reduce((sum, row) => sum + row.errors, 0),
  };
}

export async function runSdkBench(seconds = 5, rounds = 3, revocations = 100): Promise<void> {
  const server = await startTollgate('tollgate (npm start, defaults)', BASE_PORT + 90);
  const apps: App[] = [];
  try {
    const { key, orderId } = await sellKey(server);
    const verifier = (await adminCall(server, 'staff/verifier_create', { name: 'SDK benchmark' })) as { token: string };
    const headers = { 'x-api-key': key };

    const bare = await startApp('bare', server.url, verifier.token);
    apps.push(bare);
    const guarded = await startApp('guarded', server.url, verifier.token);
    apps.push(guarded);
    await fetch(`${guarded.url}/data`, { headers }).then((response) => response.arrayBuffer()); // warm the cache
    await new Promise((resolve) => setTimeout(resolve, 500));
    const bareRounds: LoadResult[] = [];
    const guardedRounds: LoadResult[] = [];
    const inOrder: LoadResult[] = [];
    // On a shared machine requests per second swing with the neighbours' load; the CPU time each app spends per
    // request does not, so it is measured too (from /proc, the app's process).
    const cpu = { bare: { ms: 0, requests: 0 }, guarded: { ms: 0, requests: 0 } };
    const load = async (side: 'bare' | 'guarded', app: App, name: string): Promise<LoadResult> => {
      const before = treeCpuMs(app.child.pid!);
      const result = await runLoad(name, { url: `${app.url}/data`, headers, seconds, connections: 10 });
      cpu[side].ms += treeCpuMs(app.child.pid!) - before;
      cpu[side].requests += result.total ?? 0;
      return result;
    };
    for (let round = 1; round <= rounds; round++) {
      const bareRound = await load('bare', bare, `express, no guard (round ${round})`);
      const guardedRound = await load('guarded', guarded, `express + SDK middleware (round ${round})`);
      bareRounds.push(bareRound);
      guardedRounds.push(guardedRound);
      inOrder.push(bareRound, guardedRound);
    }
    const bareRow = combine('express, no guard', bareRounds);
    const guardedRow = combine('express + @tollgate/sdk middleware (warm)', guardedRounds);
    printTable(`SDK middleware vs no guard (separate processes, ${rounds} alternating rounds of ${seconds} s, in the order run)`, inOrder);
    printTable('mean of the rounds', [bareRow, guardedRow], bareRow);
    process.stdout.write(`  ratio ${((guardedRow.requestsPerSec / bareRow.requestsPerSec) * 100).toFixed(1)}% (target ≥ 90%)\n`);
    const perRequest = (side: 'bare' | 'guarded') => (cpu[side].ms * 1000) / Math.max(1, cpu[side].requests);
    process.stdout.write(
      `  app CPU per request: no guard ${perRequest('bare').toFixed(0)} µs, guarded ${perRequest('guarded').toFixed(0)} µs → ` +
        `the guarded app can answer ${((perRequest('bare') / perRequest('guarded')) * 100).toFixed(1)}% of the unguarded one's requests per CPU second\n`,
    );

    await stopApp(bare);
    const answered = await stopApp(guarded);
    apps.length = 0;
    // The server writes its own counts at least once a second.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const counted = ((await adminCall(server, 'serviceapikey/usage', { order_id: orderId })) as { total: number }).total;
    process.stdout.write(`\nUses: the guarded app answered ${answered} requests (2xx); the server counted ${counted} (difference ${counted - answered})\n`);

    const tollgate = new Tollgate({ baseUrl: server.url, token: verifier.token, cacheTtlMs: 60_000 });
    while (!tollgate.connected) await new Promise((resolve) => setTimeout(resolve, 20));
    const latencies: number[] = [];
    for (let i = 0; i < revocations; i++) {
      while (!(await tollgate.verify(key)).valid) await new Promise((resolve) => setTimeout(resolve, 1));
      const from = performance.now();
      const revoked = adminCall(server, 'serviceapikey/update', { order_id: orderId, valid: false });
      while ((await tollgate.verify(key)).valid) await new Promise((resolve) => setImmediate(resolve));
      latencies.push(performance.now() - from);
      await revoked;
      await adminCall(server, 'serviceapikey/update', { order_id: orderId, valid: true });
    }
    await tollgate.close();
    latencies.sort((a, b) => a - b);
    const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
    process.stdout.write(
      `\nRevocation → refused by the SDK, over ${latencies.length} revocations (from the admin call's start): ` +
        `min ${fmt(latencies[0]!)}, p50 ${fmt(percentile(latencies, 50))}, p90 ${fmt(percentile(latencies, 90))}, ` +
        `p99 ${fmt(percentile(latencies, 99))}, max ${fmt(latencies.at(-1)!)}; over 1 s: ${latencies.filter((ms) => ms > 1000).length}\n`,
    );
  } finally {
    for (const app of apps) app.child.kill('SIGKILL');
    await server.stop();
  }
}
