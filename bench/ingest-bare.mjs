// The ingestion benchmark's bare baseline, in its own plain-node process: no HTTP, no JSON, no checks; the same rows
// Tollgate stores for the load generator's events (bench/ingest-load.mjs), inserted in batches of `batch` into a table
// of the same shape with the same indexes (migration 026), through the same driver (better-sqlite3 or pg, a pool of 10
// as Tollgate's), each batch in its own transaction with ON CONFLICT DO NOTHING and RETURNING, sorted like Tollgate's.
// What it leaves out is everything Tollgate does besides writing: the ceiling the database sets.
// SQLite is one synchronous writer, so there it is one loop; on PostgreSQL `connections` loops share the pool.
// Prints one JSON line: {batches, events, accepted, p50Ms, p99Ms, seconds, cpuMs} (cpuMs: this process's CPU over the
// loop, user + system: SQLite's work included, as it runs in the process; PostgreSQL's server's work not).
// Usage: node bench/ingest-bare.mjs '{"database": "sqlite:<file>" | "postgres://…", "orders": […], "meter":…, "connections":…, "seconds":…, "batch":…, "prefix":…}'
import { performance } from 'node:perf_hooks';

const options = JSON.parse(process.argv[2] ?? '{}');
const { database, orders, meter, connections, seconds, batch, prefix } = options;
const MODELS = ['small', 'large'];
const COLUMNS = ['order_id', 'event_id', 'meter', 'value', 'timestamp', 'properties', 'received_at'];

const DDL = [
  `create table if not exists usage_events ("order_id" integer not null, "event_id" varchar(128) not null, "meter" varchar(40) not null,
     "value" double precision, "timestamp" varchar(32) not null, "properties" text, "received_at" varchar(32) not null)`,
  'create unique index if not exists usage_events_order_event on usage_events ("order_id", "event_id")',
  'create index if not exists usage_events_order_meter_time on usage_events ("order_id", "meter", "timestamp")',
];

/** The rows of one batch, as Tollgate stores the load generator's batch of the same numbers. */
function rows(connection, sequence) {
  const now = new Date().toISOString();
  const out = [];
  for (let i = 0; i < batch; i++) {
    out.push([
      orders[(sequence + i) % orders.length],
      `${prefix}-${connection}-${sequence}-${i}`,
      meter,
      1 + ((sequence * 7919 + i * 104729) % 5000),
      now,
      JSON.stringify({ model: MODELS[i % 2] }),
      now,
    ]);
  }
  out.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return out;
}

function insertSql(placeholder) {
  let n = 0;
  const tuples = Array.from({ length: batch }, () => `(${COLUMNS.map(() => placeholder(++n)).join(', ')})`);
  return `insert into usage_events (${COLUMNS.map((c) => `"${c}"`).join(', ')}) values ${tuples.join(', ')} on conflict ("order_id", "event_id") do nothing returning "event_id"`;
}

const totals = { batches: 0, events: 0, accepted: 0 };
const latencies = [];
const cpuBefore = process.cpuUsage();
const started = performance.now();
const end = started + seconds * 1000;
const count = (accepted, since) => {
  latencies.push(performance.now() - since);
  totals.batches++;
  totals.events += batch;
  totals.accepted += accepted;
};

if (database.startsWith('sqlite:')) {
  const { default: Sqlite } = await import('better-sqlite3');
  const db = new Sqlite(database.slice('sqlite:'.length));
  // Tollgate's settings (src/db/database.ts).
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  for (const statement of DDL) db.exec(statement);
  const insert = db.prepare(insertSql(() => '?'));
  const write = db.transaction((params) => insert.all(params).length);
  for (let sequence = 0; performance.now() < end; sequence++) {
    const since = performance.now();
    count(write(rows(0, sequence).flat()), since);
  }
  db.close();
} else {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: database, max: 10 });
  for (const statement of DDL) await pool.query(statement);
  const text = insertSql((n) => `$${n}`);
  const loop = async (connection) => {
    for (let sequence = 0; performance.now() < end; sequence++) {
      const since = performance.now();
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await client.query({ text, values: rows(connection, sequence).flat() });
        await client.query('commit');
        count(result.rowCount ?? 0, since);
      } finally {
        client.release();
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, n) => loop(n)));
  await pool.end();
}

const elapsed = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
latencies.sort((a, b) => a - b);
const at = (q) => (latencies.length === 0 ? 0 : Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] * 10) / 10);
process.stdout.write(`${JSON.stringify({ ...totals, p50Ms: at(0.5), p99Ms: at(0.99), seconds: elapsed, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
