// The API key hot path as users run it: guest/serviceapikey/check against Tollgate started by `npm start` (its own
// process, default settings, a temp DATA_DIR, one active key made through the admin API) beside the bare Fastify
// POST + Map baseline in its own plain-node process. In every round each target is loaded right after a run of the
// bare route (A/B pairs in one run): this VM's speed drifts within seconds, so each ratio is taken against the bare
// run just before it, and the median over rounds is reported. "vs SQLite" divides each round's ratio by SQLite
// defaults' ratio of the same round.
// Variants (BENCH_VARIANTS=name,name…): sqlite (defaults), gateway (DIRECT_ANSWERS=false), warn (LOG_LEVEL=warn), access (ACCESS_LOG=true),
// pg (PostgreSQL + Redis on the shared servers), workers2 (WORKERS=2 on SQLite), sqlite-again (the defaults once more,
// last in each round: the spread between it and `sqlite` is what the order alone does), meters (the key's plan has
// three meters, one with a hard limit, and events ingested so their quantities are not 0: issue 23, ≥ 90% of the
// plain check), prepaid (a prepaid plan pricing every call and a metered one, its client's balance large enough never
// to run out: each check judges the balance, each flush draws from it; issue 24, ≥ 90% of the plain check).
// The check's rate limit is raised so the load is not refused (its counting is still measured); metering is on.
// Targets: check ≥ 75% of bare on SQLite, p99 ≤ 2 ms; pg ≥ 90% of sqlite; access ≥ 95% of sqlite; ratelimit ≥ 95% of
// sqlite (the per-key rate limit costs at most 5%).
// BENCH_RATE=<req/s> sends that rate to every target instead of as many as it answers: throughputs are then equal by
// construction, and what a feature costs is read from the server's CPU per request, paired round by round with
// SQLite defaults' (a server that is CPU-bound answers in inverse proportion to it). At a rate every target keeps up
// with, the load generator no longer fights the server for the cores, which is most of the noise of saturated runs.
import { randomBytes } from 'node:crypto';
import { runLoad, type LoadResult } from './lib.ts';
import { BASE_PORT, REDIS_SERVER, adminCall, sellKey, startBare, startTollgate, treeCpuMs, type Running } from './process.ts';

interface Variant {
  name: string;
  env: Record<string, string>;
  postgres?: boolean;
  /** Extra options in the key's product config. */
  keyConfig?: Record<string, unknown>;
  /** Usage events ingested for the key's order before the load (its meters' quantities), each given a fresh id. */
  events?: Array<Record<string, unknown>>;
  /** Funds added to the key's client before the load (prepaid plans). */
  funds?: string;
}

/** Three meters, one with a hard limit the load never reaches: the check holds and judges their quantities. */
const METERED_PLAN = {
  meters: [
    { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1_000_000, overage: { mode: 'per_unit', unit_price: '0.000002' } },
    { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: 1_000_000_000 },
    { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user', included: 100 },
  ],
};
const METERED_EVENTS = Array.from({ length: 300 }, (_, i) =>
  i % 3 === 0 ? { meter: 'tokens', value: 1000 + i } : i % 3 === 1 ? { meter: 'requests' } : { meter: 'users', properties: { user: `u${i % 40}` } },
);

/** A prepaid plan (issue 24): every call and every token priced, drawn from the balance as they are flushed. */
const PREPAID_PLAN = {
  prepaid: true,
  included: 0,
  overage: { mode: 'per_unit', unit_price: '0.000001' },
  meters: [{ code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 0, overage: { mode: 'per_unit', unit_price: '0.000002' } }],
};
const PREPAID_EVENTS = Array.from({ length: 100 }, (_, i) => ({ meter: 'tokens', value: 1000 + i }));

/** A key of the variant's plan on `server`, with the variant's funds added and events ingested for its order. */
export async function variantKey(server: Running, variant: Pick<Variant, 'keyConfig' | 'events' | 'funds'>): Promise<string> {
  const { key, orderId } = await sellKey(server, variant.keyConfig);
  if (variant.funds !== undefined) {
    const order = (await adminCall(server, 'order/get', { id: orderId })) as { client_id: number };
    await adminCall(server, 'client/balance_add_funds', { id: order.client_id, amount: variant.funds, description: 'Bench funds' });
  }
  if (variant.events !== undefined) {
    const events = variant.events.map((event, i) => ({ id: `bench-${i}`, order_id: orderId, ...event }));
    const answer = (await adminCall(server, 'usage/ingest', { events })) as { accepted: number };
    if (answer.accepted !== events.length) throw new Error(`usage/ingest accepted ${answer.accepted} of ${events.length} events`);
  }
  return key;
}

const COMMON = { RATE_LIMIT_API_KEY_CHECK: '1000000000/60' };

export const VARIANTS: Variant[] = [
  { name: 'sqlite', env: {} },
  // The same check through Fastify and the gateway: what the direct answers (src/http/direct.ts) save.
  { name: 'gateway', env: { DIRECT_ANSWERS: 'false' } },
  // A per-key rate limit (CONTRACT §12) high enough never to refuse, so its counting is what is measured.
  { name: 'ratelimit', env: {}, keyConfig: { rate_limit: { limit: 1_000_000_000, window_seconds: 60 } } },
  { name: 'warn', env: { LOG_LEVEL: 'warn' } },
  { name: 'access', env: { ACCESS_LOG: 'true' } },
  { name: 'pg', env: { REDIS_URL: REDIS_SERVER, RATE_LIMIT_REDIS_PREFIX: `bench:${randomBytes(4).toString('hex')}:` }, postgres: true },
  { name: 'workers2', env: { WORKERS: '2' } },
  // The defaults again, last: shows how much of the spread between rows is only the order of the targets.
  { name: 'sqlite-again', env: {} },
  // Issue 23: the plan's meters with a hard limit on, their quantities held by the check.
  { name: 'meters', env: {}, keyConfig: METERED_PLAN, events: METERED_EVENTS },
  // Issue 24: a prepaid plan, its balance judged on every check and drawn from at every flush.
  { name: 'prepaid', env: {}, keyConfig: PREPAID_PLAN, events: PREPAID_EVENTS, funds: '1000000.00' },
];

const DEFAULT_VARIANTS = ['sqlite', 'ratelimit', 'warn', 'access', 'pg', 'workers2', 'meters', 'prepaid'];

const LABELS: Record<string, string> = {
  sqlite: 'check, SQLite, defaults',
  gateway: 'check, SQLite, DIRECT_ANSWERS=false',
  ratelimit: 'check, SQLite, per-key rate limit',
  warn: 'check, SQLite, LOG_LEVEL=warn',
  access: 'check, SQLite, ACCESS_LOG=true',
  pg: 'check, PostgreSQL + Redis',
  workers2: 'check, SQLite, WORKERS=2',
  workers1: 'check, SQLite, WORKERS=1',
  'sqlite-again': 'check, SQLite, defaults (again)',
  meters: 'check, SQLite, 3 meters + hard limit',
  prepaid: 'check, SQLite, prepaid plan',
};

export interface CheckRow {
  name: string;
  rounds: LoadResult[];
  medianRps: number;
  medianP99: number;
  /** Median over rounds of (this target's req/s ÷ the bare route's req/s measured just before it). */
  ratioToBare: number;
  /** Median over rounds of (this target's ratio to bare ÷ SQLite defaults' ratio to bare in the same round). */
  ratioToSqlite: number | null;
  /** Server CPU (all its processes) per request, µs, median over rounds. */
  cpuUsPerRequest: number;
  /** Median over rounds of (this target's CPU per request ÷ SQLite defaults' in the same round). */
  cpuToSqlite: number | null;
}

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export async function runCheckBench(seconds = 5, rounds = 3, wanted: string[] = DEFAULT_VARIANTS, rate?: number): Promise<CheckRow[]> {
  // In the order asked for: servers start in that order, and the first started may fare differently (compare
  // `sqlite,sqlite-again` with `sqlite-again,sqlite`).
  const variants = wanted.flatMap((name) => VARIANTS.filter((variant) => variant.name === name));
  const servers: Array<{ variant: string; server: Running; key: string }> = [];
  const bareKey = randomBytes(16).toString('hex');
  const started: Running[] = [];
  try {
    const bare = await startBare(BASE_PORT + 1, bareKey);
    started.push(bare);
    let port = BASE_PORT + 10;
    for (const variant of variants) {
      const server = await startTollgate(variant.name, port++, { ...COMMON, ...variant.env }, { postgres: variant.postgres === true });
      started.push(server);
      servers.push({ variant: variant.name, server, key: await variantKey(server, variant) });
      process.stdout.write(`  started ${LABELS[variant.name]} (first answer after ${server.startedInMs} ms)\n`);
    }
    const targets = [
      { name: 'bare Fastify POST + Map (plain node)', url: `${bare.url}/bare`, body: JSON.stringify({ key: bareKey }), pid: bare.child.pid! },
      ...servers.map(({ variant, server, key }) => ({
        name: LABELS[variant]!,
        url: `${server.url}/api/guest/serviceapikey/check`,
        body: JSON.stringify({ key }),
        pid: server.child.pid!,
      })),
    ];
    const cpu = new Map<string, number[]>(targets.map((target) => [target.name, []]));
    const headers = { 'content-type': 'application/json' };
    // Warm every route (JIT, key cache) before measuring.
    for (const target of targets) {
      const reply = await fetch(target.url, { method: 'POST', headers, body: target.body });
      const answer = (await reply.json()) as { result: unknown };
      if (answer.result !== true) throw new Error(`${target.name} did not accept its key: ${JSON.stringify(answer)}`);
      await runLoad(target.name, { url: target.url, method: 'POST', body: target.body, headers, seconds: 2 });
    }
    const results = new Map<string, LoadResult[]>(targets.map((target) => [target.name, []]));
    /** The bare route's run just before each target's run, round by round: the VM's speed drifts within seconds. */
    const pairedBare = new Map<string, LoadResult[]>(targets.map((target) => [target.name, []]));
    const [bareTarget, ...tollgates] = targets;
    const measure = async (target: (typeof targets)[number]): Promise<LoadResult> => {
      const cpuBefore = treeCpuMs(target.pid);
      const result = await runLoad(target.name, { url: target.url, method: 'POST', body: target.body, headers, seconds, ...(rate !== undefined && { rate }) });
      results.get(target.name)!.push(result);
      cpu.get(target.name)!.push(((treeCpuMs(target.pid) - cpuBefore) * 1000) / Math.max(1, result.total ?? 0));
      return result;
    };
    for (let round = 0; round < rounds; round++) {
      const line: string[] = [];
      // Each round starts one target further on, so that every target is measured first, second… equally often:
      // a target's place in the round weighs on its figure (the last ones of a long round came out up to 20% lower).
      const shift = round % tollgates.length;
      for (const target of [...tollgates.slice(shift), ...tollgates.slice(0, shift)]) {
        const bareRun = await measure(bareTarget!);
        pairedBare.get(target.name)!.push(bareRun);
        const run = await measure(target);
        // Printed in the targets' own order, whatever the order they ran in.
        // At a set rate the throughputs are equal: the CPU per request (µs) is the figure.
        const cpuOf = (name: string) => cpu.get(name)!.at(-1)!.toFixed(1);
        line[tollgates.indexOf(target)] = rate === undefined ? `${bareRun.requestsPerSec}/${run.requestsPerSec}` : `${cpuOf(bareTarget!.name)}/${cpuOf(target.name)}`;
      }
      process.stdout.write(`  round ${round + 1}/${rounds} (bare/target): ${line.join('  ')} ${rate === undefined ? 'req/s' : 'µs CPU per request'}\n`);
    }
    const ratiosToBare = (name: string): number[] => results.get(name)!.map((r, i) => r.requestsPerSec / pairedBare.get(name)![i]!.requestsPerSec);
    const sqliteRatios = servers.some((server) => server.variant === 'sqlite') ? ratiosToBare(LABELS.sqlite!) : null;
    const sqliteCpu = sqliteRatios === null ? null : cpu.get(LABELS.sqlite!)!;
    const rows: CheckRow[] = targets.map((target) => {
      const own = results.get(target.name)!;
      const isBare = target === bareTarget;
      const ratios = isBare ? own.map(() => 1) : ratiosToBare(target.name);
      return {
        name: target.name,
        rounds: own,
        medianRps: median(own.map((r) => r.requestsPerSec)),
        medianP99: median(own.map((r) => r.p99Ms)),
        ratioToBare: median(ratios),
        // Each round's ratio to its own bare run, divided by SQLite's of the same round.
        ratioToSqlite: sqliteRatios === null || isBare ? null : median(ratios.map((ratio, i) => ratio / sqliteRatios[i]!)),
        cpuUsPerRequest: median(cpu.get(target.name)!),
        cpuToSqlite: sqliteCpu === null || isBare ? null : median(cpu.get(target.name)!.map((us, i) => us / sqliteCpu[i]!)),
      };
    });
    printRows(rows, rounds, seconds, rate);
    return rows;
  } finally {
    for (const server of started.toReversed()) await server.stop().catch((error: unknown) => process.stderr.write(`${String(error)}\n`));
  }
}

function printRows(rows: CheckRow[], rounds: number, seconds: number, rate: number | undefined): void {
  const load = rate === undefined ? '' : `, ${rate} req/s sent to each`;
  process.stdout.write(`\nAPI key check, separate processes, 10 connections${load}, ${rounds} rounds of ${seconds} s, each target right after a bare run (medians)\n`);
  const sqlite = rows.find((row) => row.name === LABELS.sqlite);
  for (const row of rows) {
    const bad = row.rounds.reduce((n, r) => n + r.non2xx + r.errors, 0);
    const vsSqlite = row !== sqlite && row.ratioToSqlite !== null ? `  ${(row.ratioToSqlite * 100).toFixed(0)}% of SQLite` : '';
    const cpuRatio = row === rows[0] ? '' : `  (CPU: ${((rows[0]!.cpuUsPerRequest / row.cpuUsPerRequest) * 100).toFixed(0)}% of bare's efficiency)`;
    process.stdout.write(
      `  ${row.name.padEnd(38)} ${String(Math.round(row.medianRps)).padStart(7)} req/s   p99 ${row.medianP99} ms   ${(row.ratioToBare * 100).toFixed(0).padStart(3)}% of bare${vsSqlite}   ${row.cpuUsPerRequest.toFixed(0)} µs CPU/request${cpuRatio}${bad > 0 ? `  (non-2xx/errors ${bad})` : ''}\n`,
    );
  }
  if (sqlite !== undefined && rate !== undefined) {
    // Equal throughputs by construction: the figures that mean something are the CPU per request.
    for (const row of rows) {
      if (row.cpuToSqlite === null || row === sqlite) continue;
      process.stdout.write(`  ${row.name}: CPU per request ${(row.cpuToSqlite * 100).toFixed(1)}% of the plain check's (median of ${rounds} paired rounds)\n`);
    }
    for (const [variant, what] of [['ratelimit', 'per-key rate limit'], ['access', 'access log']] as const) {
      const row = rows.find((candidate) => candidate.name === LABELS[variant]);
      if (row?.cpuToSqlite == null) continue;
      process.stdout.write(`  target: ${what} costs ≤ 5% → ${((row.cpuToSqlite - 1) * 100).toFixed(1)}% more CPU per check, ${row.cpuToSqlite <= 1.05 ? 'met' : 'MISSED'}\n`);
    }
    // ≥ 90% of the throughput is ≤ 1/0.9 of the CPU per check for a CPU-bound server.
    for (const [variant, what] of [['meters', 'meters + hard limit'], ['prepaid', 'prepaid plan']] as const) {
      const row = rows.find((candidate) => candidate.name === LABELS[variant]);
      if (row?.cpuToSqlite == null) continue;
      process.stdout.write(`  target: ${what} ≥ 90% of the plain check → CPU per check ${(row.cpuToSqlite * 100).toFixed(1)}% of the plain check's, ${row.cpuToSqlite <= 1 / 0.9 ? 'met' : 'MISSED'}\n`);
    }
  } else if (sqlite !== undefined) {
    const meets = sqlite.ratioToBare >= 0.75 && sqlite.medianP99 <= 2;
    process.stdout.write(`  target: SQLite check ≥ 75% of bare and p99 ≤ 2 ms → ${meets ? 'met' : 'MISSED'}\n`);
    for (const [variant, what] of [['ratelimit', 'per-key rate limit'], ['access', 'access log']] as const) {
      const row = rows.find((candidate) => candidate.name === LABELS[variant]);
      if (row === undefined) continue;
      const share = row.ratioToSqlite ?? 0;
      process.stdout.write(`  target: ${what} costs ≤ 5% (≥ 95% of the plain check) → ${(share * 100).toFixed(0)}%, ${share >= 0.95 ? 'met' : 'MISSED'}\n`);
    }
    for (const [variant, what] of [['meters', 'meters + hard limit (issue 23)'], ['prepaid', 'prepaid plan (issue 24)']] as const) {
      const row = rows.find((candidate) => candidate.name === LABELS[variant]);
      if (row === undefined) continue;
      const share = row.ratioToSqlite ?? 0;
      process.stdout.write(`  target: ${what} ≥ 90% of the plain check → ${(share * 100).toFixed(0)}%, ${share >= 0.9 ? 'met' : 'MISSED'}\n`);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rate = process.env.BENCH_RATE === undefined ? undefined : Number(process.env.BENCH_RATE);
  await runCheckBench(Number(process.env.BENCH_SECONDS ?? 5), Number(process.env.BENCH_ROUNDS ?? 3), process.env.BENCH_VARIANTS?.split(',') ?? undefined, rate);
}
