// Selling benchmark: checkout throughput (client/cart/add_item + client/cart/checkout, each connection with its own
// client) and admin/invoice/mark_as_paid throughput (each request pays a different unpaid invoice), on a temp SQLite
// file with rate limits off. Both flows are stateful, so the load generator is autocannon's programmatic API with a
// per-connection `setupRequest`, run in a child process so it does not share the server's event loop.
// Standalone: `npx tsx bench/selling.ts`.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.ts';
import { bootstrap, ensureFirstAdmin } from '../src/bootstrap.ts';
import { loadConfig } from '../src/config.ts';
import type { Services } from '../src/services.ts';
import { listen, printTable, type LoadResult } from './lib.ts';

const ADMIN_TOKEN = 'benchAdminToken0123456789abcdefgh';
const AUTOCANNON = pathToFileURL(fileURLToPath(new URL('../node_modules/autocannon/autocannon.js', import.meta.url))).href;
const CONNECTIONS = 10;

/** The child's script: argv[1] names a JSON job file; prints autocannon's result as JSON. */
const LOAD_SCRIPT = `
import { readFileSync } from 'node:fs';
import autocannon from ${JSON.stringify(AUTOCANNON)};
const job = JSON.parse(readFileSync(process.argv[1], 'utf8'));
let nextToken = 0;
let nextInvoice = 0;
const json = (authorization) => ({ 'content-type': 'application/json', authorization });
// Each connection gets its own credentials once (setupClient runs per connection; request contexts reset every cycle).
const requestsFor = (authorization) =>
  job.flow === 'checkout'
    ? [
        { method: 'POST', path: '/api/client/cart/add_item', headers: json(authorization), body: JSON.stringify({ id: job.productId, period: '1M' }) },
        { method: 'POST', path: '/api/client/cart/checkout', headers: json(authorization), body: '{}' },
      ]
    : [
        {
          method: 'POST',
          path: '/api/admin/invoice/mark_as_paid',
          headers: json(authorization),
          setupRequest: (request) => ({ ...request, body: JSON.stringify({ id: job.invoiceIds[Math.min(nextInvoice++, job.invoiceIds.length - 1)] }) }),
        },
      ];
const requests = requestsFor(job.authorizations[0]);
const setupClient = (client) => {
  client.setRequests(requestsFor(job.authorizations[nextToken++ % job.authorizations.length]));
  if (process.env.BENCH_DEBUG) client.on('body', (body) => { const text = body.toString(); if (text.includes('"error":{')) process.stderr.write(text + '\\n'); });
};
const result = await autocannon({ url: job.url, connections: job.connections, duration: job.seconds, requests, setupClient });
process.stdout.write(JSON.stringify({ average: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors }));
`;

interface Job {
  flow: 'checkout' | 'pay';
  url: string;
  connections: number;
  seconds: number;
  authorizations: string[];
  productId?: number;
  invoiceIds?: number[];
}

function runJob(name: string, job: Job, requestsPerOperation: number, dir: string): Promise<LoadResult> {
  const jobFile = join(dir, `${job.flow}.json`);
  writeFileSync(jobFile, JSON.stringify(job));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', LOAD_SCRIPT, jobFile],
      { maxBuffer: 64 * 1024 * 1024, timeout: (job.seconds + 60) * 1000 },
      (error, stdout, stderr) => {
        if (process.env.BENCH_DEBUG !== undefined) process.stderr.write(stderr);
        if (error !== null) {
          reject(error);
          return;
        }
        const report = JSON.parse(stdout) as { average: number; p50: number; p99: number; non2xx: number; errors: number };
        resolve({
          name,
          requestsPerSec: Math.round(report.average / requestsPerOperation),
          p50Ms: report.p50,
          p99Ms: report.p99,
          non2xx: report.non2xx,
          errors: report.errors,
        });
      },
    );
  });
}

const basic = (user: string, token: string): string => `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`;

async function seedProduct(services: Services): Promise<number> {
  const id = await services.products.prepare('Bench plan', 'custom');
  await services.products.update(id, {
    status: 'enabled',
    setup: 'after_payment',
    pricing: { type: 'recurrent', recurrent: { '1M': { price: '10.00' } } },
  });
  return id;
}

/** `count` unpaid invoices, each for a new pending order, written in large transactions. */
async function seedInvoices(services: Services, productId: number, clientId: number, count: number): Promise<number[]> {
  const product = await services.products.requireRow(productId);
  const ids: number[] = [];
  for (let done = 0; done < count; done += 1000) {
    await services.db.transaction().execute(async (trx) => {
      for (let i = done; i < Math.min(count, done + 1000); i++) {
        const order = await services.orders.create(trx, { clientId, product, period: '1M', quantity: 1, price: 1000, currency: services.config.currency });
        const invoice = await services.invoices.create(trx, clientId, [
          { orderId: order.id, task: 'activate', title: 'Bench plan', period: '1M', quantity: 1, price: 1000, total: 1000 },
        ]);
        ids.push(invoice.id);
      }
    });
  }
  return ids;
}

export async function runSellingBench(seconds = 5): Promise<LoadResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-selling-'));
  const services = await bootstrap(
    loadConfig({
      DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`,
      DATA_DIR: dir,
      SCHEDULER: 'off',
      RATE_LIMIT_ENABLED: 'false',
      TOLLGATE_ADMIN_EMAIL: 'bench@example.com',
      TOLLGATE_ADMIN_PASSWORD: 'Bench-Passw0rd',
      TOLLGATE_ADMIN_API_TOKEN: ADMIN_TOKEN,
    }),
  );
  const app = buildApp(services);
  try {
    await ensureFirstAdmin(services);
    const productId = await seedProduct(services);
    const clients: string[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const id = await services.clients.create({ email: `buyer${i}@example.com`, first_name: `Buyer ${i}` });
      clients.push(basic('client', await services.clients.apiToken(id)));
    }
    const payer = await services.clients.create({ email: 'payer@example.com', first_name: 'Payer' });
    process.stdout.write('seeding 30,000 unpaid invoices…\n');
    const invoiceIds = await seedInvoices(services, productId, payer, 30_000);
    const url = await listen(app);

    const checkout = await runJob(
      'client/cart add_item + checkout (per checkout)',
      { flow: 'checkout', url, connections: CONNECTIONS, seconds, authorizations: clients, productId },
      2,
      dir,
    );
    const pay = await runJob(
      'admin/invoice/mark_as_paid',
      { flow: 'pay', url, connections: CONNECTIONS, seconds, authorizations: [basic('admin', ADMIN_TOKEN)], invoiceIds },
      1,
      dir,
    );
    const results = [checkout, pay];
    printTable(`selling on SQLite, ${CONNECTIONS} connections, ${seconds} s each`, results);
    return results;
  } finally {
    await app.close();
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runSellingBench();
}
