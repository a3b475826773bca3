// The admin dashboard at scale (issue 25 item 3): Tollgate started by `npm start` (its own process, default settings)
// on a database seeded with BENCH_INVOICES (default 1,000,000) invoices over the last three years, BENCH_ORDERS
// (100,000) orders and as many clients, a payment for each paid invoice, a failed attempt on one invoice in 20, a
// refund on one in 50, usage and top-up lines on one in 10, and a credit note on one in 200 — bulk SQL, one statement
// per table. Nine invoices in ten are in euros, each storing one of two rates against the default USD (so the totals in
// the default currency convert at stored rates, migration 053), EUR being one of the instance's currencies. Then
// admin/stats/dashboard is called over HTTP (the default 30 days, then a year, then 2 years) and one
// figure's list, 5 times each; the median and the first call are reported. Target ≤ 200 ms. BENCH_DATABASES=sqlite,pg.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { ADMIN_TOKEN, BASE_PORT, freshPostgres, startTollgate, type Running } from './process.ts';

const AUTH = `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`;
/** Three years, in seconds: the invoices are spread evenly over them, the newest a minute ago. */
const SPAN_SECONDS = 3 * 365 * 86_400;

/** The seed as one SQL statement per table: `invoices` invoices, `orders` orders and clients. */
export function dashboardSeed(invoices: number, orders: number, postgres: boolean): string[] {
  const series = (n: number) =>
    postgres ? `generate_series(1, ${n}) as s(i)` : `(with recursive s(i) as (select 1 union all select i + 1 from s where i < ${n}) select i from s) as s`;
  // `seconds` before now (an SQL expression), stored as the application stores times.
  const ago = (seconds: string) =>
    postgres
      ? `to_char((now() at time zone 'utc') - ((${seconds}) || ' seconds')::interval, 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`
      : `strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-' || (${seconds}) || ' seconds')`;
  const pick = (list: string[]) => `(case i % ${list.length} ${list.map((v, k) => `when ${k} then '${v}'`).join(' ')} end)`;
  const step = Math.floor(SPAN_SECONDS / invoices);
  const invoiceAt = ago(`(${invoices} - i) * ${step} + 60`);
  const orderAt = ago(`(${orders} - i) * ${Math.floor(SPAN_SECONDS / orders)} + 60`);
  const currency = `(case when i % 10 = 0 then 'USD' else 'EUR' end)`;
  const rate = `(case when i % 10 = 0 then '1' when i % 20 < 10 then '0.92' else '0.95' end)`;
  return [
    `insert into currencies (code, is_default, conversion_rate, is_rate_manual, rate_updated_at, created_at, updated_at)
     values ('EUR', 0, '0.9', 1, '2020-01-01T00:00:00Z', '2020-01-01T00:00:00Z', '2020-01-01T00:00:00Z')`,
    `insert into clients (email, first_name, last_name, company, country, currency, status, api_token_hash, api_token_enc, created_at, updated_at)
     select 'user' || i || '@example.com', 'Client', 'Number ' || i, null, ${pick(['DE', 'FR', 'US', 'NL', 'IT'])}, 'EUR', 'active', 'seed-token-' || i, 'x', ${orderAt}, ${orderAt} from ${series(orders)}`,
    `insert into products (title, slug, type, status, hidden, setup, pricing, config, created_at, updated_at)
     values ('Seed plan', 'seed-plan', 'custom', 'enabled', 0, 'after_payment', '{"type":"free"}', '{}', '2020-01-01T00:00:00Z', '2020-01-01T00:00:00Z')`,
    // Orders: every period kind, one in 8 canceled (some of them lately), one in 20 suspended, one in 10 set to cancel at
    // period end, one in 15 on a running trial; expiries spread over the next 60 days.
    `insert into orders (client_id, product_id, title, type, period, quantity, price, currency, status, config, created_at, updated_at,
                         activated_at, canceled_at, cancel_at_period_end, trial_state, trial_ends_at, expires_at)
     select i, (select max(id) from products), 'Seed plan', 'custom', ${pick(['1M', '1M', '1M', '3M', '1Y', '1W', '6M', '2Y'])}, 1 + i % 3, 500 + (i % 50) * 100, ${currency},
            case when i % 8 = 0 then 'canceled' when i % 20 = 0 then 'suspended' else 'active' end, '{}', ${orderAt}, ${orderAt},
            ${orderAt}, case when i % 8 = 0 then ${ago(`(i % 90) * 86400`)} end, case when i % 10 = 1 then 1 else 0 end,
            case when i % 15 = 2 then 'running' end, case when i % 15 = 2 then ${ago('-864000')} end, ${ago(`-((i % 60) * 86400 + 3600)`)}
     from ${series(orders)}`,
    `insert into invoices (hash, number, client_id, status, currency, subtotal, total, created_at, updated_at, paid_at, currency_rate, currency_rate_at, currency_base)
     select 'seed-invoice-' || i, case when i % 9 = 0 then null else 'INV-' || i end, 1 + i % ${orders},
            case when i % 9 = 0 then 'unpaid' when i % 50 = 7 then 'refunded' else 'paid' end, ${currency}, 1000 + i % 7000, 1000 + i % 7000,
            ${invoiceAt}, ${invoiceAt}, case when i % 9 = 0 then null else ${invoiceAt} end, ${rate}, '2020-01-01T00:00:00Z', 'USD'
     from ${series(invoices)}`,
    `insert into invoice_items (invoice_id, order_id, task, title, period, quantity, price, total, executed)
     select id, null, case when id % 20 = 3 then 'usage' when id % 10 = 5 then 'deposit' else 'renew' end, 'Seed line', null, 1, total, total, 1
     from invoices where id % 10 in (3, 5)`,
    `insert into transactions (invoice_id, client_id, gateway_id, gateway, transaction_id, amount, currency, type, status, message, created_at)
     select id, client_id, null, case when id % 25 = 1 then 'credits' else 'stripe' end, 'pi_' || id, total, currency, 'payment',
            case when status = 'refunded' then 'refunded' else 'processed' end, null, paid_at
     from invoices where paid_at is not null`,
    `insert into transactions (invoice_id, client_id, gateway_id, gateway, transaction_id, amount, currency, type, status, message, created_at)
     select id, client_id, null, 'stripe', 'pi_failed_' || id, total, currency, 'payment', 'failed', 'Your card was declined.', created_at
     from invoices where id % 20 = 4`,
    `insert into transactions (invoice_id, client_id, gateway_id, gateway, transaction_id, amount, currency, type, status, message, created_at)
     select id, client_id, null, 'stripe', 're_' || id, case when status = 'refunded' then total else total / 3 end, currency, 'refund', 'refunded', null, paid_at
     from invoices where paid_at is not null and id % 50 in (7, 8)`,
    `insert into credit_notes (number, invoice_id, client_id, currency, method, reason, subtotal, tax, total, tax_name, transaction_id, staff_id, source_key, created_at)
     select 'CN-' || id, id, client_id, currency, 'balance', 'Seed', 100, 0, 100, null, null, null, 'seed:' || id, paid_at
     from invoices where paid_at is not null and id % 200 = 11`,
  ];
}

async function timeCall(server: Running, path: string): Promise<{ ms: number; firstMs: number }> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const response = await fetch(`${server.url}/api/admin/${path}`, { headers: { authorization: AUTH } });
    const body = (await response.json()) as { error: { message: string } | null };
    times.push(performance.now() - started);
    if (body.error !== null) throw new Error(`${path}: ${body.error.message}`);
  }
  return { ms: times.toSorted((a, b) => a - b)[2]!, firstMs: times[0]! };
}

const day = (daysAgo: number): string => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);

export async function runDashboardBench(invoices = 1_000_000, orders = 100_000, databases = ['sqlite', 'pg']): Promise<void> {
  const calls: Array<[string, string]> = [
    ['dashboard, last 30 days (default)', 'stats/dashboard'],
    ['dashboard, last 365 days', `stats/dashboard?from=${day(364)}`],
    ['dashboard, last 2 years', `stats/dashboard?from=${day(730)}`],
    ['dashboard_list revenue, first page', 'stats/dashboard_list?figure=revenue'],
    ['dashboard_list mrr, first page', 'stats/dashboard_list?figure=mrr'],
    ['get_summary_income (all time)', 'stats/get_summary_income'],
  ];
  for (const database of databases) {
    const postgres = database === 'pg';
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-dashboard-'));
    const pgDb = postgres ? await freshPostgres() : null;
    const env: Record<string, string> = { DATABASE_URL: pgDb?.url ?? `sqlite:${join(dataDir, 'tollgate.db')}`, DATA_DIR: dataDir, SCHEDULER: 'off', RATE_LIMIT_API_AUTHENTICATED: '1000000/60' };
    try {
      // Create the schema with a first start, then seed with the server stopped.
      await (await startTollgate('schema', BASE_PORT + 60, env)).stop();
      process.stdout.write(`\nseeding ${invoices.toLocaleString('en')} invoices and ${orders.toLocaleString('en')} orders on ${database}…\n`);
      const seedStarted = Date.now();
      if (postgres) {
        const client = new pg.Client({ connectionString: pgDb!.url });
        await client.connect();
        for (const statement of dashboardSeed(invoices, orders, true)) await client.query(statement);
        // A fresh bulk load needs this for index-only scans (autovacuum would get there on its own).
        await client.query('vacuum analyze');
        await client.end();
      } else {
        const sqlite = new SqliteDatabase(join(dataDir, 'tollgate.db'));
        sqlite.pragma('journal_mode = WAL');
        for (const statement of dashboardSeed(invoices, orders, false)) sqlite.exec(statement);
        sqlite.exec('analyze');
        sqlite.pragma('wal_checkpoint(TRUNCATE)');
        sqlite.close();
      }
      process.stdout.write(`  seeded in ${((Date.now() - seedStarted) / 1000).toFixed(0)} s\n`);
      const server = await startTollgate(database, BASE_PORT + 61, env);
      try {
        process.stdout.write(`The dashboard on ${postgres ? 'PostgreSQL' : 'SQLite'} (median of 5 calls and the first call, HTTP included)\n`);
        let worst = 0;
        for (const [name, path] of calls) {
          const { ms, firstMs } = await timeCall(server, path);
          worst = Math.max(worst, ms);
          process.stdout.write(`  ${name.padEnd(38)} ${ms.toFixed(1).padStart(7)} ms   first call ${firstMs.toFixed(1).padStart(7)} ms${ms > 200 ? '   OVER 200 ms' : ''}\n`);
        }
        process.stdout.write(`  slowest median ${worst.toFixed(1)} ms → ${worst <= 200 ? 'meets' : 'MISSES'} the target (≤ 200 ms)\n`);
      } finally {
        await server.stop();
      }
    } finally {
      await pgDb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runDashboardBench(Number(process.env.BENCH_INVOICES ?? 1_000_000), Number(process.env.BENCH_ORDERS ?? 100_000), process.env.BENCH_DATABASES?.split(',') ?? ['sqlite', 'pg']);
}
