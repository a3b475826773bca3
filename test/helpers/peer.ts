// A second Tollgate process for the cross-process tests (test/processes/apikey-peer.ts, started with tsx): the same database as
// the test's app, optionally the same Redis, talked to over a real socket.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import type { TestApp } from './app.ts';

export interface Peer {
  url: string;
  child: ChildProcess;
  call(path: string, params: Record<string, unknown>, adminToken?: string): Promise<{ status: number; result: unknown }>;
  /** A counter's total on the peer's GET /metrics, e.g. `tollgate_rate_counter_syncs_total{result="given_up"}`. */
  metric(series: string): Promise<number>;
  stop(): Promise<void>;
}

/** The peers' METRICS_TOKEN: random per test run, never a secret worth keeping. */
const PEER_METRICS_TOKEN = randomBytes(16).toString('hex');

export async function startPeer(t: TestApp, redis: boolean): Promise<Peer> {
  const config = t.services.config;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: config.databaseUrl,
    TOLLGATE_SECRET: config.secret ?? '',
    REDIS_URL: redis ? (config.redisUrl ?? '') : '',
    RATE_LIMIT_REDIS_PREFIX: config.rateLimit.redisPrefix,
    RATE_LIMIT_ENABLED: 'false',
    SCHEDULER: 'off',
    LOG_LEVEL: 'warn',
    DATA_DIR: '/tmp/tollgate-test',
    METRICS_TOKEN: PEER_METRICS_TOKEN,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/processes/apikey-peer.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    // Generous: on a busy CI machine starting a process under tsx alone can take tens of seconds.
    const timer = setTimeout(() => reject(new Error('the second process did not start within 90 s')), 90_000);
    lines.on('line', (line) => {
      const match = /^listening (\S+)$/.exec(line);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`the second process exited with ${code}`)));
  });
  return {
    url,
    child,
    async call(path, params, adminToken) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (adminToken !== undefined) headers.authorization = `Basic ${Buffer.from(`admin:${adminToken}`).toString('base64')}`;
      const response = await fetch(`${url}/api/${path}`, { method: 'POST', headers, body: JSON.stringify(params) });
      const body = (await response.json()) as { result: unknown };
      return { status: response.status, result: body.result };
    },
    async metric(series) {
      const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${PEER_METRICS_TOKEN}` } });
      const line = (await response.text()).split('\n').find((text) => text.startsWith(`${series} `));
      if (line === undefined) throw new Error(`the second process has no series ${series} on /metrics`);
      return Number(line.slice(series.length + 1));
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

