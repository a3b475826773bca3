// Tollgate as `npm start` runs it with WORKERS=2 (scripts/start.mjs): a real primary and two workers on one socket, on
// a fresh SQLite file or a fresh PostgreSQL database (TEST_DATABASE_URL), for the two-process tests. The workers'
// "Server listening" lines give the port and their pids (a replacement worker adds its own).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { freshPostgresDatabase } from './test-database.ts';

export interface Cluster {
  readonly child: ChildProcess;
  readonly dir: string;
  readonly databaseUrl: string;
  /** The port the workers share. */
  port: number;
  /** The pids of the workers that said they listen, in order (a replacement comes last). */
  readonly workers: number[];
  primaryPid: number;
  /** Everything the processes printed, for the failure messages. */
  readonly output: string[];
  /** Waits until `condition` holds; fails (with the output) after `timeoutMs` or when the primary exits. */
  waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void>;
  /** Stops the primary (and its workers), drops the database and removes the data directory. */
  stop(): Promise<void>;
}

/** Starts the primary and waits for both workers; `env` adds to (or overrides) the defaults. */
export async function startCluster(prefix: string, adminToken: string, env: Record<string, string>): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-${prefix}-`));
  const pg = process.env.TEST_DATABASE_URL ?? '';
  const fresh = pg === '' ? null : await freshPostgresDatabase(pg);
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    env: {
      PATH: process.env.PATH,
      WORKERS: '2',
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      DATABASE_URL: fresh?.url ?? `sqlite:${join(dir, 'tollgate.db')}`,
      TOLLGATE_SECRET: randomBytes(32).toString('hex'),
      TOLLGATE_ADMIN_EMAIL: 'admin@example.com',
      TOLLGATE_ADMIN_PASSWORD: 'Admin-Passw0rd',
      TOLLGATE_ADMIN_API_TOKEN: adminToken,
      SCHEDULER: 'off',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const cluster: Cluster = {
    child,
    dir,
    databaseUrl: fresh?.url ?? `sqlite:${join(dir, 'tollgate.db')}`,
    port: 0,
    workers: [],
    primaryPid: 0,
    output: [],
    async waitFor(condition, timeoutMs, what) {
      const deadline = Date.now() + timeoutMs;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${cluster.output.join('\n')}`);
        if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode})\n${cluster.output.join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await fresh?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  child.stderr.on('data', (chunk: Buffer) => cluster.output.push(chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    cluster.output.push(line);
    const primary = /"msg":"primary (\d+) started/.exec(line);
    if (primary !== null) cluster.primaryPid = Number(primary[1]);
    const listening = /"pid":(\d+).*Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
    if (listening !== null) {
      cluster.workers.push(Number(listening[1]));
      cluster.port = Number(listening[2]);
    }
  });
  await cluster.waitFor(() => cluster.workers.length >= 2, 90_000, 'two workers listening');
  return cluster;
}

/**
 * One request on a connection of its own, so node:cluster's round-robin spreads the requests over the workers;
 * `adminToken` signs it in as staff.
 */
export function clusterCall(port: number, path: string, params: Record<string, unknown>, adminToken?: string): Promise<{ status: number; result: unknown }> {
  const body = JSON.stringify(params);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (adminToken !== undefined) headers.authorization = `Basic ${Buffer.from(`admin:${adminToken}`).toString('base64')}`;
    const req = request({ host: '127.0.0.1', port, path: `/api/${path}`, method: 'POST', agent: false, headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, result: (JSON.parse(text) as { result: unknown }).result });
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('error', reject);
    // A connection handed to a worker as it died may never be answered: give up on it rather than wait forever.
    req.setTimeout(5000, () => req.destroy(new Error('timed out')));
    req.end(body);
  });
}
