// Servers under test as users run them: Tollgate started exactly as `npm start` starts it (the package.json
// "start" script, through a shell with node_modules/.bin on PATH, as npm does), in its own process with a temp
// DATA_DIR and default settings except what a variant names; the bare baseline in its own plain-node process.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const ADMIN_TOKEN = 'benchAdminToken0123456789abcdefgh';
/** The shared servers of this machine (HELPERS.md); override with BENCH_DATABASE_URL / BENCH_REDIS_URL. */
export const PG_SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:55500/postgres';
export const REDIS_SERVER = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:56500';
/**
 * This benchmark's own port range (62600–62699): above Linux's ephemeral ports (32768–60999). Inside them, a client
 * polling a port nobody listens on yet can be given that very port as its own and connect to itself (TCP's
 * simultaneous open), which then holds the port in TIME_WAIT for a minute: the server meant for it cannot start.
 */
export const BASE_PORT = Number(process.env.BENCH_BASE_PORT ?? 62600);

export interface Running {
  name: string;
  url: string;
  child: ChildProcess;
  /** Milliseconds from spawn to the first successful answer. */
  startedInMs: number;
  /** Tollgate's DATABASE_URL (a server started by startTollgate), for a benchmark that checks what it stored. */
  databaseUrl?: string;
  stop(): Promise<void>;
}

const START_SCRIPT = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;

async function waitForAnswer(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the server exited with ${child.exitCode}`);
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${url}: no answer within ${timeoutMs} ms`);
}

async function portReleased(url: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(500) });
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function track(
  name: string,
  url: string,
  child: ChildProcess,
  started: number,
  cleanup: () => Promise<void> = async () => {},
  stdoutFile?: string,
  startTimeoutMs = 60_000,
): Promise<Running> {
  // The last few chunks of output, for the error of a server that fails to start. Kept as they come, decoded only
  // then: under ACCESS_LOG=true the server writes megabytes a second, and decoding them all would load the machine
  // the benchmark measures on (the reader only takes the chunks).
  const tail: Buffer[] = [];
  const keep = (chunk: Buffer): void => {
    tail.push(chunk);
    if (tail.length > 8) tail.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const output = (): string => {
    const written = stdoutFile === undefined ? '' : readFileSync(stdoutFile, 'utf8').slice(-4000);
    return `${written}${Buffer.concat(tail).toString()}`.slice(-4000);
  };
  return waitForAnswer(url, child, startTimeoutMs).then(
    () => ({
      name,
      url,
      child,
      startedInMs: Date.now() - started,
      async stop() {
        if (child.exitCode === null && child.pid !== undefined) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          // The whole group: the shell, tsx and the node process it starts (and any cluster workers).
          process.kill(-child.pid, 'SIGTERM');
          const timer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, 'SIGKILL'), 10_000);
          await exited;
          clearTimeout(timer);
          // The shell can end before the server it started has let go of the port: the next server on that port
          // would otherwise be timed by the old one's answer.
          await portReleased(url);
        }
        await cleanup();
      },
    }),
    async (error: unknown) => {
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
      const said = output();
      await cleanup();
      throw new Error(`${String(error)}\n${said}`);
    },
  );
}

/** A fresh PostgreSQL database on the shared server, dropped by the returned function. */
export async function freshPostgres(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `tollgate_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_SERVER });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_SERVER);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_SERVER });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * `npm start` with `env` on top of a clean environment (no inherited DATABASE_URL, LOG_LEVEL…), on 127.0.0.1:`port`,
 * with a temp DATA_DIR. `postgres: true` gives it a fresh database on the shared server.
 */
export async function startTollgate(
  name: string,
  port: number,
  env: Record<string, string> = {},
  options: {
    postgres?: boolean;
    viaNpm?: boolean;
    /**
     * A command the start script runs under (valgrind and its options, for `bench/instructions.ts`): the script's own
     * command, `node scripts/start.mjs`, is then run as `<wrapper…> node scripts/start.mjs`, with no shell between.
     */
    wrapper?: string[];
  } = {},
): Promise<Running> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const database = options.postgres === true ? await freshPostgres() : null;
  const childEnv: NodeJS.ProcessEnv = {
    PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`,
    HOME: process.env.HOME,
    NODE_ENV: process.env.NODE_ENV,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    TOLLGATE_ADMIN_EMAIL: 'bench@example.com',
    TOLLGATE_ADMIN_PASSWORD: 'Bench-Passw0rd',
    TOLLGATE_ADMIN_API_TOKEN: ADMIN_TOKEN,
    // DATA_DIR holds the secret only; the SQLite file goes there too, or every variant would share ./data/tollgate.db.
    DATABASE_URL: database?.url ?? `sqlite:${join(dataDir, 'tollgate.db')}`,
    ...env,
  };
  const started = Date.now();
  // Standard output to a file, as `npm start >> tollgate.log` would: read through a pipe, the ACCESS_LOG=true lines
  // (megabytes a second) would load this process, on the two cores the benchmark measures the server on.
  const stdoutFile = join(dataDir, 'stdout.log');
  const stdout = openSync(stdoutFile, 'a');
  const stdio: StdioOptions = ['ignore', stdout, 'pipe'];
  // `viaNpm`: through the npm CLI itself (what a user types, npm's own start-up included); otherwise the script
  // exactly as npm would run it, without npm's start-up (the load benchmarks need the server, not npm).
  const [command, ...args] =
    options.viaNpm === true ? ['npm', 'start', '--silent'] : options.wrapper !== undefined ? [...options.wrapper, ...startCommand()] : ['sh', '-c', START_SCRIPT];
  const child = spawn(command!, args, { cwd: ROOT, env: childEnv, detached: true, stdio });
  closeSync(stdout);
  // Port 0: the server takes a free port itself and its log line names it, so benchmarks run from several worktrees at
  // once never collide, and nothing polls a port before its server holds it.
  const cleanup = async (): Promise<void> => {
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  let url = `http://127.0.0.1:${port}`;
  if (port === 0) {
    try {
      url = await listeningUrl(stdoutFile, child);
    } catch (error) {
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
      await cleanup();
      throw error;
    }
  }
  return track(
    name,
    url,
    child,
    started,
    cleanup,
    stdoutFile,
    // Under valgrind node starts some fifty times slower.
    options.wrapper === undefined ? 60_000 : 300_000,
  ).then((running) => ({ ...running, databaseUrl: childEnv.DATABASE_URL! }));
}

/** The address in the server's "Server listening at http://…" log line (written once it listens). */
async function listeningUrl(stdoutFile: string, child: ChildProcess, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(readFileSync(stdoutFile, 'utf8'));
    if (match !== null) return match[1]!;
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}: ${readFileSync(stdoutFile, 'utf8').slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no "Server listening" line within ${timeoutMs} ms`);
}

/** The start script as a command and its arguments: it is one plain command (`node scripts/start.mjs`). */
function startCommand(): string[] {
  if (!/^node [\w./-]+$/.test(START_SCRIPT)) throw new Error(`the start script is not one plain node command: ${START_SCRIPT}`);
  return START_SCRIPT.split(' ');
}

/** The bare Fastify POST + Map baseline, in plain node. */
export function startBare(port: number, key: string): Promise<Running> {
  const started = Date.now();
  const child = spawn(process.execPath, [join(ROOT, 'bench', 'bare-server.mjs'), String(port), key], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  return track('bare Fastify POST + Map (plain node)', `http://127.0.0.1:${port}`, child, started);
}

/** Calls an admin action of a running Tollgate and returns its result (throws on an error envelope). */
export async function adminCall(server: Running, path: string, params: Record<string, unknown>): Promise<unknown> {
  const response = await fetch(`${server.url}/api/admin/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
    body: JSON.stringify(params),
  });
  const body = (await response.json()) as { result: unknown; error: { message: string } | null };
  if (body.error !== null) throw new Error(`${path}: ${body.error.message}`);
  return body.result;
}

/** An active API key on `server` and its order, made through its admin API (product, client, order, key). */
export async function sellKey(server: Running, extraConfig: Record<string, unknown> = {}): Promise<{ key: string; orderId: number }> {
  const product = await adminCall(server, 'product/prepare', { title: 'Bench API', type: 'apikey' });
  await adminCall(server, 'product/update', { id: product, status: 'enabled', config: { custom: { monthlyLimit: 1_000_000_000, tier: 'pro' }, ...extraConfig } });
  const client = await adminCall(server, 'client/create', { email: `bench-${randomBytes(4).toString('hex')}@example.com`, first_name: 'Bench' });
  const order = (await adminCall(server, 'order/create', { client_id: client, product_id: product, activate: true })) as number;
  const key = (await adminCall(server, 'serviceapikey/get', { order_id: order })) as { api_key: string };
  return { key: key.api_key, orderId: order };
}

/** An active API key on `server` (`extraConfig`: product options such as a rate limit). */
export async function issueKey(server: Running, extraConfig: Record<string, unknown> = {}): Promise<string> {
  return (await sellKey(server, extraConfig)).key;
}

/**
 * CPU time (user + system, ms) used so far by process `root` and all its descendants (Linux /proc). On a shared
 * machine the CPU a server spends per request is a steadier figure than its requests per second.
 */
export function treeCpuMs(root: number): number {
  const parents = new Map<number, number>();
  const cpu = new Map<number, number>();
  const tick = 10; // ms per clock tick (USER_HZ = 100 on Linux)
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(name), Number(fields[1]));
      cpu.set(Number(name), (Number(fields[11]) + Number(fields[12])) * tick);
    } catch {
      // The process ended while we looked.
    }
  }
  let total = 0;
  for (const [pid, ms] of cpu) {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parents.get(p)) {
      if (p === root) {
        total += ms;
        break;
      }
    }
  }
  return total;
}
