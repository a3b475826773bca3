// The SDK (issue 11), in one run: an Express app guarding a route with @tollgate/sdk's middleware (warm cache) beside
// the same app with no guard, each in its own process, loaded by autocannon in a third; a real Tollgate server process
// behind the SDK. Then: uses counted by the server equal the requests the guarded app answered (0 lost, 0 double),
// and how long a revocation made through the admin API takes to be refused by the SDK, over 100 revocations.
// Target: guarded ≥ 90% of bare; revocations refused within 1 s.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Tollgate } from '../packages/sdk/src/index.ts';
import { sellKey, startTollgate, type TollgateProcess } from '../packages/sdk/test/server.ts';
import { printTable, runLoad } from './lib.ts';

function startApp(mode: 'bare' | 'guarded', server: TollgateProcess): Promise<{ url: string; child: ChildProcess; lines: AsyncIterableIterator<string> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/sdk-app.ts', mode, server.baseUrl, server.adminToken], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return lines.next().then(({ value }) => ({ url: String(value).replace(/^listening /, ''), child, lines }));
}

async function stopApp(app: { child: ChildProcess; lines: AsyncIterableIterator<string> }): Promise<number> {
  app.child.kill('SIGTERM');
  const { value } = await app.lines.next();
  return Number(/answered (\d+)/.exec(String(value))?.[1]);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runSdkBench(seconds = 5): Promise<void> {
  const server = await startTollgate();
  try {
    const { key, orderId } = await sellKey(server);
    const headers = { 'x-api-key': key };

    const bare = await startApp('bare', server);
    const bareResult = await runLoad('express, no guard', { url: `${bare.url}/data`, headers, seconds, connections: 10 });
    await stopApp(bare);

    const guarded = await startApp('guarded', server);
    await fetch(`${guarded.url}/data`, { headers }); // warm the cache
    await new Promise((resolve) => setTimeout(resolve, 500));
    const guardedResult = await runLoad('express + @tollgate/sdk middleware (warm)', { url: `${guarded.url}/data`, headers, seconds, connections: 10 });
    const answered = await stopApp(guarded);
    printTable('SDK middleware vs no guard (separate processes, same run)', [bareResult, guardedResult], bareResult);
    const ratio = guardedResult.requestsPerSec / bareResult.requestsPerSec;
    process.stdout.write(`  ratio ${(ratio * 100).toFixed(1)}% (target ≥ 90%)\n`);

    // The server writes its own counts at least once a second.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const counted = ((await server.admin('serviceapikey/usage', { order_id: orderId })).result as { total: number }).total;
    process.stdout.write(`\nUses: the guarded app answered ${answered} requests; the server counted ${counted} (${counted - answered} difference)\n`);

    const tollgate = new Tollgate({ baseUrl: server.baseUrl, token: server.adminToken, cacheTtlMs: 60_000 });
    while (!tollgate.connected) await new Promise((resolve) => setTimeout(resolve, 20));
    const latencies: number[] = [];
    for (let i = 0; i < 100; i++) {
      while (!(await tollgate.verify(key)).valid) await new Promise((resolve) => setTimeout(resolve, 1));
      const from = performance.now();
      const revoked = server.admin('serviceapikey/update', { order_id: orderId, valid: false });
      while ((await tollgate.verify(key)).valid) await new Promise((resolve) => setImmediate(resolve));
      latencies.push(performance.now() - from);
      await revoked;
      await server.admin('serviceapikey/update', { order_id: orderId, valid: true });
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
    await server.stop();
  }
}
