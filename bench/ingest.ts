// Metered events in (issue 23, "Performance"): `admin/usage/ingest` as users run it. Tollgate is started as `npm start`
// starts it (its own process, default settings, a temp DATA_DIR, a free port), on SQLite and on PostgreSQL (+ Redis,
// as the check benchmark's `pg` variant; BENCH_DATABASE_URL / BENCH_REDIS_URL). Through its admin API: a plan with a
// `sum` meter, a few orders with their keys, a verifier token (the credential app servers report usage with). The
// load generator (bench/ingest-load.mjs, its own process) sends batches of 100 events with ids never sent before over
// 10 keep-alive connections; beside it, in the same run, the bare baseline (bench/ingest-bare.mjs, its own plain-node
// process) inserts the same rows into a table of the same shape and indexes, on the same database kind, with the same
// driver. Each round runs the bare baseline, then Tollgate, and the ratio is taken per round (this VM's speed drifts
// within seconds); medians over rounds are printed, with each side's CPU per event (steadier on a shared machine; on
// SQLite it holds the database's work, which runs in the process, on PostgreSQL the server's work is in neither).
// Targets: ≥ 10,000 events/s accepted on each database, ≥ 25% of the bare baseline.
// BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_DATABASES (sqlite,pg), BENCH_CONNECTIONS (10), BENCH_BATCH (100).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { REDIS_SERVER, ROOT, adminCall, freshPostgres, sellKey, startTollgate, treeCpuMs, type Running } from './process.ts';

export interface IngestOptions {
  seconds: number;
  rounds: number;
  databases: Array<'sqlite' | 'pg'>;
  connections: number;
  batch: number;
}

interface RunResult {
  batches: number;
  events: number;
  accepted: number;
  duplicates?: number;
  rejected?: number;
  errors?: number;
  p50Ms: number;
  p99Ms: number;
  seconds: number;
  /** The bare process's own CPU over its loop (ms). */
  cpuMs?: number;
  firstError?: string | null;
}

interface Round {
  bare: RunResult;
  server: RunResult;
  /** Server CPU (all its processes) per accepted event, µs. */
  cpuUsPerEvent: number;
  /** The bare process's CPU per accepted event, µs. */
  bareCpuUsPerEvent: number;
}

const METER = 'tokens';
const ORDERS = 4;

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Runs one of the plain-node helpers with its options as JSON and returns the JSON line it prints. */
function runHelper(script: string, options: Record<string, unknown>): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [join(ROOT, 'bench', script), JSON.stringify(options)], { cwd: ROOT, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${script}: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as RunResult);
    });
  });
}

const perSecond = (run: RunResult): number => run.accepted / run.seconds;

/** Rows in the server's usage_events, read beside it (SQLite's WAL lets a reader in while the server writes). */
async function storedRows(databaseUrl: string): Promise<number> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new SqliteDatabase(databaseUrl.slice('sqlite:'.length), { readonly: true });
    try {
      return (db.prepare('select count(*) as n from usage_events').get() as { n: number }).n;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>('select count(*) as n from usage_events')).rows[0]!.n);
  } finally {
    await client.end();
  }
}

/** The plan, orders, keys and verifier token of one server, made through its admin API. */
async function prepare(server: Running): Promise<{ keys: string[]; orders: number[]; authorization: string }> {
  const meters = [{ code: METER, name: 'Tokens', unit: 'token', aggregation: 'sum' }];
  const keys: string[] = [];
  const orders: number[] = [];
  for (let n = 0; n < ORDERS; n++) {
    const sold = await sellKey(server, { meters });
    keys.push(sold.key);
    orders.push(sold.orderId);
  }
  const verifier = (await adminCall(server, 'staff/verifier_create', { name: 'Ingest benchmark' })) as { token: string };
  return { keys, orders, authorization: `Basic ${Buffer.from(`admin:${verifier.token}`).toString('base64')}` };
}

async function benchDatabase(database: 'sqlite' | 'pg', options: IngestOptions): Promise<Round[]> {
  const env: Record<string, string> = database === 'pg' ? { REDIS_URL: REDIS_SERVER, RATE_LIMIT_REDIS_PREFIX: `bench:${randomBytes(4).toString('hex')}:` } : {};
  const server = await startTollgate(`tollgate, ${database}`, 0, env, { postgres: database === 'pg' });
  const bareDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-bare-'));
  const bareDatabase = database === 'pg' ? await freshPostgres() : null;
  try {
    process.stdout.write(`  started Tollgate on ${database} at ${server.url} (first answer after ${server.startedInMs} ms)\n`);
    const { keys, orders, authorization } = await prepare(server);
    const common = { meter: METER, connections: options.connections, batch: options.batch };
    const load = (seconds: number, prefix: string) => runHelper('ingest-load.mjs', { ...common, url: `${server.url}/api/admin/usage/ingest`, authorization, keys, seconds, prefix });
    const bare = (seconds: number, prefix: string) =>
      runHelper('ingest-bare.mjs', { ...common, database: bareDatabase?.url ?? `sqlite:${join(bareDir, 'bare.db')}`, orders, seconds, prefix });
    // Warm both (JIT, caches, the tables' first pages) before measuring.
    const warm = await load(2, 'warm');
    if (warm.errors !== 0 || warm.rejected !== 0) throw new Error(`the warm-up was refused: ${warm.firstError}`);
    await bare(1, 'warm');
    const rounds: Round[] = [];
    for (let round = 0; round < options.rounds; round++) {
      const bareRun = await bare(options.seconds, `r${round}`);
      const cpuBefore = treeCpuMs(server.child.pid!);
      const serverRun = await load(options.seconds, `r${round}`);
      const cpuUsPerEvent = ((treeCpuMs(server.child.pid!) - cpuBefore) * 1000) / Math.max(1, serverRun.accepted);
      if (serverRun.errors !== 0 || serverRun.rejected !== 0 || serverRun.duplicates !== 0) {
        process.stdout.write(`  round ${round + 1}: ${serverRun.errors} failed batches, ${serverRun.rejected} rejected, ${serverRun.duplicates} duplicates (${serverRun.firstError})\n`);
      }
      const bareCpuUsPerEvent = ((bareRun.cpuMs ?? 0) * 1000) / Math.max(1, bareRun.accepted);
      rounds.push({ bare: bareRun, server: serverRun, cpuUsPerEvent, bareCpuUsPerEvent });
      process.stdout.write(
        `  round ${round + 1}/${options.rounds} (bare/Tollgate): ${Math.round(perSecond(bareRun))}/${Math.round(perSecond(serverRun))} events/s, p99 per batch ${bareRun.p99Ms}/${serverRun.p99Ms} ms, CPU per event ${bareCpuUsPerEvent.toFixed(1)}/${cpuUsPerEvent.toFixed(1)} µs\n`,
      );
    }
    // What the answers called accepted is what the database holds: the figures count stored events, nothing else.
    const accepted = warm.accepted + rounds.reduce((sum, r) => sum + r.server.accepted, 0);
    const stored = await storedRows(server.databaseUrl!);
    if (stored !== accepted) throw new Error(`the server answered ${accepted} events accepted but stored ${stored}`);
    process.stdout.write(`  ${stored} events stored, as many as the answers accepted\n`);
    return rounds;
  } finally {
    await server.stop();
    await bareDatabase?.drop();
    rmSync(bareDir, { recursive: true, force: true });
  }
}

export async function runIngestBench(options: IngestOptions): Promise<void> {
  const results: Array<{ database: string; rounds: Round[] }> = [];
  for (const database of options.databases) {
    process.stdout.write(`\n  ${database}\n`);
    results.push({ database, rounds: await benchDatabase(database, options) });
  }
  process.stdout.write(
    `\nadmin/usage/ingest, separate processes, ${options.connections} connections, batches of ${options.batch}, ${options.rounds} rounds of ${options.seconds} s, each right after a bare run (medians)\n`,
  );
  for (const { database, rounds } of results) {
    const label = database === 'pg' ? 'PostgreSQL + Redis' : 'SQLite';
    const bareRate = median(rounds.map((r) => perSecond(r.bare)));
    const rate = median(rounds.map((r) => perSecond(r.server)));
    const ratio = median(rounds.map((r) => perSecond(r.server) / perSecond(r.bare)));
    const p99 = median(rounds.map((r) => r.server.p99Ms));
    const bareP99 = median(rounds.map((r) => r.bare.p99Ms));
    const cpu = median(rounds.map((r) => r.cpuUsPerEvent));
    const bareCpu = median(rounds.map((r) => r.bareCpuUsPerEvent));
    process.stdout.write(`  ${`bare inserts, ${label}`.padEnd(32)} ${String(Math.round(bareRate)).padStart(8)} events/s   p99 per batch ${bareP99} ms   ${bareCpu.toFixed(1)} µs CPU per event\n`);
    process.stdout.write(
      `  ${`Tollgate, ${label}`.padEnd(32)} ${String(Math.round(rate)).padStart(8)} events/s   p99 per batch ${p99} ms   ${(ratio * 100).toFixed(0)}% of bare   ${cpu.toFixed(1)} µs server CPU per event (${((bareCpu / cpu) * 100).toFixed(0)}% of bare's efficiency)\n`,
    );
    process.stdout.write(`  target on ${label}: ≥ 10,000 events/s → ${rate >= 10_000 ? 'met' : 'MISSED'}; ≥ 25% of bare → ${ratio >= 0.25 ? 'met' : 'MISSED'}\n`);
  }
}

export function ingestOptionsFromEnv(): IngestOptions {
  return {
    seconds: Number(process.env.BENCH_SECONDS ?? 5),
    rounds: Number(process.env.BENCH_ROUNDS ?? 3),
    databases: (process.env.BENCH_DATABASES?.split(',') ?? ['sqlite', 'pg']).filter((name): name is 'sqlite' | 'pg' => name === 'sqlite' || name === 'pg'),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 10),
    batch: Number(process.env.BENCH_BATCH ?? 100),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await runIngestBench(ingestOptionsFromEnv());
