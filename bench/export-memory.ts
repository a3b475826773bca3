// Measures what a large CSV export costs the server: N clients (default 1,000,000) inserted into a fresh SQLite
// database, then GET /api/admin/export/clients.csv over a real socket, read to the end, while the server's heap and
// RSS are sampled. Run: `npx tsx bench/export-memory.ts [rows]`. Prints rows, bytes, seconds and peak memory.
import { buildApp } from '../src/app.ts';
import { createTestApp } from '../test/helpers/app.ts';

const rows = Number(process.argv[2] ?? 1_000_000);
const t = await createTestApp();
const now = new Date().toISOString();
const started = Date.now();
for (let start = 0; start < rows; start += 500) {
  const count = Math.min(500, rows - start);
  await t.services.db
    .insertInto('clients')
    .values(
      Array.from({ length: count }, (_, index) => ({
        email: `bulk${start + index}@example.com`,
        first_name: 'Bulk',
        last_name: String(start + index),
        status: 'active' as const,
        api_token_hash: `bulk-${start + index}`,
        api_token_enc: 'x',
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
}
const inserted = (Date.now() - started) / 1000;
const app = buildApp(t.services, {});
const base = await app.listen({ host: '127.0.0.1', port: 0 });
global.gc?.();
const baseline = process.memoryUsage();
let peakHeap = baseline.heapUsed;
let peakRss = baseline.rss;
const sampler = setInterval(() => {
  const usage = process.memoryUsage();
  peakHeap = Math.max(peakHeap, usage.heapUsed);
  peakRss = Math.max(peakRss, usage.rss);
}, 20);
const begin = Date.now();
const response = await fetch(`${base}/api/admin/export/clients.csv`, { headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
let bytes = 0;
let lines = 0;
for await (const chunk of response.body!) {
  bytes += (chunk as Uint8Array).length;
  for (const byte of chunk as Uint8Array) if (byte === 10) lines += 1;
}
clearInterval(sampler);
const mb = (value: number): string => `${(value / 1024 / 1024).toFixed(1)} MB`;
process.stdout.write(
  `rows ${rows} (inserted in ${inserted.toFixed(1)} s); export ${lines - 1} rows, ${mb(bytes)} in ${((Date.now() - begin) / 1000).toFixed(1)} s; ` +
    `heap ${mb(baseline.heapUsed)} before, peak ${mb(peakHeap)}; rss ${mb(baseline.rss)} before, peak ${mb(peakRss)}\n`,
);
await app.close();
await t.close();
