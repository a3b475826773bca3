// Lists and searches at a million rows, as users run them: Tollgate started by `npm start` on a database seeded
// with BENCH_ROWS (default 1,000,000) clients, as many orders and as many invoices (one each per client), on
// SQLite and on PostgreSQL (the shared server). Each admin get_list below is called 5 times over HTTP; the median
// wall time is reported (target ≤ 50 ms). BENCH_DATABASES=sqlite,pg picks the databases.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { ADMIN_TOKEN, BASE_PORT, freshPostgres, startTollgate, type Running } from './process.ts';

const AUTH = `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`;

/**
 * The seed, as one SQL statement per table; `n` rows of each. Dates one a minute, the newest (2026-01-01) with the
 * highest id as the application writes them, stored to the second; five plan titles; paid invoices numbered INV-<i>.
 */
export function seedStatements(n: number, postgres: boolean): string[] {
  const series = postgres ? `generate_series(1, ${n}) as s(i)` : `(with recursive s(i) as (select 1 union all select i + 1 from s where i < ${n}) select i from s) as s`;
  const at = postgres
    ? `to_char(timestamp '2026-01-01' - ((${n} - i) || ' minutes')::interval, 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`
    : `strftime('%Y-%m-%dT%H:%M:%SZ', '2026-01-01', '-' || (${n} - i) || ' minutes')`;
  const pick = (list: string[]) => `(case i % ${list.length} ${list.map((v, k) => `when ${k} then '${v}'`).join(' ')} end)`;
  const first = pick(['Anna', 'Ben', 'Chloe', 'David', 'Emma', 'Felix', 'Grace', 'Hugo', 'Iris', 'Jonas', 'Karin', 'Liam', 'Mia']);
  const last = pick(['Smith', 'Meyer', 'Garcia', 'Rossi', 'Novak', 'Berg', 'Kowalski', 'Dubois', 'Jensen', 'Silva', 'Tanaka']);
  return [
    `insert into clients (email, first_name, last_name, company, country, currency, status, api_token_hash, api_token_enc, created_at, updated_at)
     select 'user' || i || '@mail' || (i % 997) || '.example.com', ${first} || i, ${last}, case when i % 3 = 0 then 'Company ' || (i % 50000) end,
            'DE', 'EUR', case when i % 50 = 0 then 'suspended' when i % 97 = 0 then 'canceled' else 'active' end,
            'seed-token-' || i, 'x', ${at}, ${at} from ${series}`,
    `insert into products (title, slug, type, status, hidden, setup, pricing, config, created_at, updated_at)
     values ('Seed plan', 'seed-plan', 'custom', 'enabled', 0, 'after_payment', '{"type":"free"}', '{}', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z')`,
    `insert into orders (client_id, product_id, title, type, period, quantity, price, currency, status, config, created_at, updated_at)
     select i, (select max(id) from products), ${pick(['Starter plan', 'Pro plan', 'Business plan', 'API Basic', 'API Scale'])}, 'custom', '1M', 1, 1000, 'EUR',
            case when i % 40 = 0 then 'suspended' when i % 13 = 0 then 'pending_setup' else 'active' end, '{}', ${at}, ${at} from ${series}`,
    `insert into invoices (hash, number, client_id, status, currency, subtotal, total, created_at, updated_at)
     select 'seed-invoice-' || i, case when i % 9 = 0 then null else 'INV-' || i end, i, case when i % 9 = 0 then 'unpaid' else 'paid' end,
            'EUR', 1000, 1000, ${at}, ${at} from ${series}`,
  ];
}

export const QUERIES: Array<[string, string]> = [
  ['clients, first page', 'client/get_list'],
  ['clients, page 500', 'client/get_list?page=500'],
  ['clients, status=suspended', 'client/get_list?status=suspended'],
  ['clients, status=active', 'client/get_list?status=active'],
  ['clients, search "user424242"', 'client/get_list?search=user424242'],
  ['clients, search "meyer"', 'client/get_list?search=meyer'],
  ['clients, email "mail42.example"', 'client/get_list?email=mail42.example'],
  ['clients, name "grace1234"', 'client/get_list?name=grace1234'],
  ['clients, company "company 4242"', 'client/get_list?company=company%204242'],
  ['clients, created on one day', 'client/get_list?date_from=2025-06-01&date_to=2025-06-01'],
  ['clients, suspended + one month', 'client/get_list?status=suspended&date_from=2025-06-01&date_to=2025-06-30'],
  ['clients, search "gra" (3 letters)', 'client/get_list?search=gra'],
  ['clients, search "xq" (no trigram)', 'client/get_list?search=xq'],
  ['clients, search "gr" (2 letters)', 'client/get_list?search=gr'],
  ['clients, canceled + search "meyer"', 'client/get_list?status=canceled&search=meyer'],
  ['orders, first page', 'order/get_list'],
  ['orders, page 500', 'order/get_list?page=500'],
  ['orders, status=suspended', 'order/get_list?status=suspended'],
  ['orders, status=active', 'order/get_list?status=active'],
  ['orders, client_id=500000', 'order/get_list?client_id=500000'],
  ['orders, search "user424242"', 'order/get_list?search=user424242'],
  ['orders, search "meyer"', 'order/get_list?search=meyer'],
  ['orders, search "business"', 'order/get_list?search=business'],
  ['orders, search "zzz" (no match)', 'order/get_list?search=zzz'],
  ['orders, search "meyer" + suspended', 'order/get_list?search=meyer&status=suspended'],
  ['orders, created on one day', 'order/get_list?date_from=2025-06-01&date_to=2025-06-01'],
  ['orders, search "meyer" + one month', 'order/get_list?search=meyer&date_from=2025-06-01&date_to=2025-06-30'],
  ['orders, search "meyer", page 5', 'order/get_list?search=meyer&page=5'],
  ['orders, search "xq" (2 letters)', 'order/get_list?search=xq'],
  ['invoices, first page', 'invoice/get_list'],
  ['invoices, status=unpaid', 'invoice/get_list?status=unpaid'],
  ['invoices, client_id=500000', 'invoice/get_list?client_id=500000'],
  ['invoices, search "user424242"', 'invoice/get_list?search=user424242'],
  ['invoices, search "meyer"', 'invoice/get_list?search=meyer'],
  ['invoices, search "inv-4242"', 'invoice/get_list?search=inv-4242'],
  ['invoices, created on one day', 'invoice/get_list?date_from=2025-06-01&date_to=2025-06-01'],
  ['invoices, unpaid + one month', 'invoice/get_list?status=unpaid&date_from=2025-06-01&date_to=2025-06-30'],
  ['invoices, search "meyer" + one month', 'invoice/get_list?search=meyer&date_from=2025-06-01&date_to=2025-06-30'],
  ['invoices, search "mail42.example"', 'invoice/get_list?search=mail42.example'],
  ['invoices, unpaid + search "user42424"', 'invoice/get_list?status=unpaid&search=user42424'],
];

export async function timeQuery(server: Running, path: string): Promise<{ ms: number; firstMs: number; total: string }> {
  const times: number[] = [];
  let total = '';
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const response = await fetch(`${server.url}/api/admin/${path}`, { headers: { authorization: AUTH } });
    const body = (await response.json()) as { result: { total: number; total_capped?: true } | null; error: { message: string } | null };
    times.push(performance.now() - started);
    if (body.error !== null) throw new Error(`${path}: ${body.error.message}`);
    // "101+": a common search, not counted (total_capped: at least this many).
    total = `${body.result!.total}${body.result!.total_capped === true ? '+' : ''}`;
  }
  return { ms: times.toSorted((a, b) => a - b)[2]!, firstMs: times[0]!, total };
}

export async function runSearchBench(rows = 1_000_000, databases = ['sqlite', 'pg']): Promise<void> {
  for (const database of databases) {
    const postgres = database === 'pg';
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-search-'));
    const pgDb = postgres ? await freshPostgres() : null;
    const env: Record<string, string> = { DATABASE_URL: pgDb?.url ?? `sqlite:${join(dataDir, 'tollgate.db')}`, DATA_DIR: dataDir, SCHEDULER: 'off', RATE_LIMIT_API_AUTHENTICATED: '1000000/60' };
    try {
      // Create the schema with a first start, then seed with the server stopped.
      await (await startTollgate('schema', BASE_PORT + 40, env)).stop();
      process.stdout.write(`\nseeding ${rows.toLocaleString('en')} clients, orders and invoices on ${database}…\n`);
      const seedStarted = Date.now();
      if (postgres) {
        const client = new pg.Client({ connectionString: pgDb!.url });
        await client.connect();
        for (const statement of seedStatements(rows, true)) await client.query(statement);
        // Autovacuum would get there on its own; a fresh bulk load needs it for index-only scans.
        await client.query('vacuum analyze');
        await client.end();
      } else {
        const sqlite = new SqliteDatabase(join(dataDir, 'tollgate.db'));
        sqlite.pragma('journal_mode = WAL');
        for (const statement of seedStatements(rows, false)) sqlite.exec(statement);
        sqlite.exec('analyze');
        sqlite.pragma('wal_checkpoint(TRUNCATE)');
        sqlite.close();
      }
      process.stdout.write(`  seeded in ${((Date.now() - seedStarted) / 1000).toFixed(0)} s\n`);
      const server = await startTollgate(database, BASE_PORT + 41, env);
      try {
        process.stdout.write(`Lists and searches on ${database === 'pg' ? 'PostgreSQL' : 'SQLite'}, ${rows.toLocaleString('en')} rows each (median of 5 calls and the first call, HTTP included)\n`);
        let worst = 0;
        for (const [name, path] of QUERIES) {
          const { ms, firstMs, total } = await timeQuery(server, path);
          worst = Math.max(worst, ms, firstMs);
          const over = Math.max(ms, firstMs) > 50 ? '   OVER 50 ms' : '';
          process.stdout.write(`  ${name.padEnd(36)} ${ms.toFixed(1).padStart(7)} ms   first call ${firstMs.toFixed(1).padStart(7)} ms   total ${total}${over}\n`);
        }
        process.stdout.write(`  slowest ${worst.toFixed(1)} ms → ${worst <= 50 ? 'meets' : 'MISSES'} the target (≤ 50 ms each)\n`);
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
  await runSearchBench(Number(process.env.BENCH_ROWS ?? 1_000_000), process.env.BENCH_DATABASES?.split(',') ?? ['sqlite', 'pg']);
}
