// Starts a real Tollgate server process (src/main.ts) on SQLite in a temp folder, for the SDK's tests and bench.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

const REPO = resolve(import.meta.dirname, '../../..');
const BUILD_LOCK = join(tmpdir(), 'tollgate-sdk-web-build.lock');

/**
 * src/main.ts builds the web UI when it is missing or stale; test files run in parallel, so build it first, one
 * process at a time (a lock directory; a lock older than 5 minutes is a crashed holder's).
 */
async function webBuilt(): Promise<void> {
  for (;;) {
    try {
      mkdirSync(BUILD_LOCK);
      break;
    } catch {
      try {
        if (Date.now() - statSync(BUILD_LOCK).mtimeMs > 300_000) rmdirSync(BUILD_LOCK);
      } catch {
        // released meanwhile
      }
      await new Promise((done) => setTimeout(done, 200));
    }
  }
  try {
    const { ensureWebBuilt } = await import('../../../src/http/web-build.ts');
    await ensureWebBuilt();
  } finally {
    rmdirSync(BUILD_LOCK);
  }
}

export interface TollgateProcess {
  baseUrl: string;
  port: number;
  adminToken: string;
  /** The server's SQLite file, for tests that read what it stored. */
  databaseFile: string;
  admin(path: string, params?: Record<string, unknown>): Promise<{ status: number; result: unknown }>;
  /** SIGKILL: no shutdown, no flush. */
  kill(): Promise<void>;
  /** Starts the process again on the same port and data. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startTollgate(env: Record<string, string> = {}): Promise<TollgateProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-'));
  const adminToken = randomBytes(16).toString('hex');
  const databaseFile = join(dataDir, 'tollgate.db');
  const baseEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    DATA_DIR: dataDir,
    DATABASE_URL: `sqlite:${databaseFile}`,
    TOLLGATE_SECRET: randomBytes(32).toString('hex'),
    SCHEDULER: 'off',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    RATE_LIMIT_ENABLED: 'false',
    TOLLGATE_ADMIN_EMAIL: 'admin@example.com',
    TOLLGATE_ADMIN_PASSWORD: 'Admin-Passw0rd',
    TOLLGATE_ADMIN_API_TOKEN: adminToken,
    ...env,
  };
  let child: ChildProcess | null = null;
  let port = 0;

  async function launch(): Promise<void> {
    const started = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: REPO,
      env: { ...baseEnv, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    let stderr = '';
    started.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    port = await new Promise<number>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`Tollgate did not start: ${stderr}`)), 120_000);
      const lines = createInterface({ input: started.stdout });
      lines.on('line', (line) => {
        const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
        if (match !== null) {
          clearTimeout(timer);
          done(Number(match[1]));
        }
      });
      started.on('exit', (code) => fail(new Error(`Tollgate exited (${code}): ${stderr}`)));
    });
  }

  function exited(): Promise<void> {
    const current = child;
    if (current === null || current.exitCode !== null || current.signalCode !== null) return Promise.resolve();
    return new Promise((done) => current.once('exit', () => done()));
  }

  await webBuilt();
  await launch();
  const handle: TollgateProcess = {
    get baseUrl() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    adminToken,
    databaseFile,
    async admin(path, params = {}) {
      const response = await fetch(`http://127.0.0.1:${port}/api/admin/${path}`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`admin:${adminToken}`).toString('base64')}`, 'content-type': 'application/json' },
        body: JSON.stringify(params),
      });
      const body = (await response.json()) as { result: unknown };
      return { status: response.status, result: body.result };
    },
    async kill() {
      const done = exited();
      child?.kill('SIGKILL');
      await done;
    },
    async restart() {
      await launch();
    },
    async stop() {
      const done = exited();
      child?.kill('SIGTERM');
      await done;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}

/** An apikey product, a client and an active order: the order's key and ids. */
export async function sellKey(server: TollgateProcess, config: Record<string, unknown> = {}): Promise<{ key: string; orderId: number }> {
  const product = (await server.admin('product/prepare', { title: 'API plan', type: 'apikey' })).result as number;
  await server.admin('product/update', { id: product, status: 'enabled', config });
  const email = `c-${randomBytes(4).toString('hex')}@example.com`;
  const client = (await server.admin('client/create', { email, first_name: 'A', last_name: 'B', password: 'Client-Passw0rd' })).result as number;
  const orderId = (await server.admin('order/create', { client_id: client, product_id: product, activate: true })).result as number;
  const key = ((await server.admin('serviceapikey/get', { order_id: orderId })).result as { api_key: string }).api_key;
  return { key, orderId };
}
