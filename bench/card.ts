// Card payment benchmark: checkouts paid by card per second. One operation is what a card customer causes:
// client/cart/add_item + client/cart/checkout, guest/invoice/payment (Tollgate creates the Checkout Session at
// "Stripe" through the official library), and the customer paying on the hosted page, which makes "Stripe" send the
// two signed webhooks (checkout.session.completed, payment_intent.succeeded) that Tollgate verifies, stores and applies
// (the payment, the activation, the saved card — one more library call) before the page answers. Tollgate runs as
// `npm start` starts it (bench/process.ts), in its own process on a SQLite file, with default settings except rate
// limits off (ten customers check out far faster than CHECKOUT allows one person) and the Stripe settings; "Stripe" is
// the local stand-in the tests use (test/helpers/stripe-server.ts), in this process; the load runs in a child
// process. Port: BENCH_BASE_PORT (default 62600) + 91. Standalone: `npx tsx bench/card.ts`.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StripeStandIn } from '../test/helpers/stripe-server.ts';
import { printTable, type LoadResult } from './lib.ts';
import { adminCall, BASE_PORT, startTollgate } from './process.ts';

const CONNECTIONS = 10;

/** The child: `connections` workers, each a client paying one checkout after another for `seconds`. */
const LOAD_SCRIPT = `
import { readFileSync } from 'node:fs';
const job = JSON.parse(readFileSync(process.argv[1], 'utf8'));
const post = async (url, body, authorization) => {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(authorization && { authorization }) }, body: JSON.stringify(body), redirect: 'manual' });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text.startsWith('{') ? text : 'null') };
};
const deadline = Date.now() + job.seconds * 1000;
let done = 0;
let failed = 0;
const latencies = [];
async function worker(authorization) {
  while (Date.now() < deadline) {
    const started = performance.now();
    try {
      await post(job.url + '/api/client/cart/add_item', { id: job.productId, period: '1M' }, authorization);
      const checkout = await post(job.url + '/api/client/cart/checkout', {}, authorization);
      const payment = await post(job.url + '/api/guest/invoice/payment', { hash: checkout.body.result.invoice_hash, gateway_id: 'stripe' });
      const paid = await fetch(payment.body.result.redirect_url + '?sync=1', { method: 'POST', redirect: 'manual' });
      await paid.arrayBuffer();
      if (paid.status !== 303) throw new Error('webhook not accepted: ' + paid.status);
      done += 1;
      latencies.push(performance.now() - started);
    } catch (error) {
      failed += 1;
      if (process.env.BENCH_DEBUG) process.stderr.write(String(error) + '\\n');
    }
  }
}
const begun = Date.now();
await Promise.all(job.authorizations.map((authorization) => worker(authorization)));
const elapsed = (Date.now() - begun) / 1000;
latencies.sort((a, b) => a - b);
const at = (q) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
process.stdout.write(JSON.stringify({ perSecond: done / elapsed, done, failed, p50: at(0.5), p99: at(0.99) }));
`;

const basic = (user: string, token: string): string => `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`;

export async function runCardBench(seconds = 5): Promise<LoadResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-card-'));
  const stripe = new StripeStandIn();
  await stripe.start();
  try {
    const server = await startTollgate('tollgate (npm start)', BASE_PORT + 91, { RATE_LIMIT_ENABLED: 'false', ...stripe.env({ STRIPE_TIMEOUT_MS: '20000' }) });
    try {
      stripe.webhookUrl = `${server.url}/webhooks/stripe`;
      const productId = (await adminCall(server, 'product/prepare', { title: 'Bench card plan', type: 'custom' })) as number;
      await adminCall(server, 'product/update', { id: productId, status: 'enabled', setup: 'after_payment', pricing: { type: 'recurrent', recurrent: { '1M': { price: '10.00' } } } });
      const authorizations: string[] = [];
      for (let i = 0; i < CONNECTIONS; i++) {
        const id = (await adminCall(server, 'client/create', { email: `card${i}@example.com`, first_name: `Card ${i}` })) as number;
        authorizations.push(basic('client', (await adminCall(server, 'profile/api_key_reset', { id })) as string));
      }
      const jobFile = join(dir, 'card.json');
      writeFileSync(jobFile, JSON.stringify({ url: server.url, productId, seconds, authorizations }));
      const report = await new Promise<{ perSecond: number; done: number; failed: number; p50: number; p99: number }>((resolve, reject) => {
        execFile(process.execPath, ['--input-type=module', '-e', LOAD_SCRIPT, jobFile], { maxBuffer: 16 * 1024 * 1024, timeout: (seconds + 60) * 1000 }, (error, stdout, stderr) => {
          if (process.env.BENCH_DEBUG !== undefined) process.stderr.write(stderr);
          if (error !== null) reject(error);
          else resolve(JSON.parse(stdout) as { perSecond: number; done: number; failed: number; p50: number; p99: number });
        });
      });
      // Every paid checkout is one processed transaction: the figure counts only payments Tollgate applied.
      const applied = ((await adminCall(server, 'invoice/transaction_get_list', { status: 'processed', per_page: 1 })) as { total: number }).total;
      const result: LoadResult = {
        name: 'checkout + card payment (session + 2 webhooks)',
        requestsPerSec: Math.round(report.perSecond * 10) / 10,
        p50Ms: report.p50,
        p99Ms: report.p99,
        non2xx: report.failed,
        errors: Math.abs(applied - report.done),
      };
      printTable(`card payments on SQLite, npm start, ${CONNECTIONS} concurrent customers, ${seconds} s (operations/s; ${report.done} paid, ${applied} applied)`, [result]);
      return [result];
    } finally {
      await server.stop();
    }
  } finally {
    await stripe.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runCardBench();
}
