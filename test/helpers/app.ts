// Builds a real Tollgate for a test file: SQLite in memory, or a fresh PostgreSQL database on the server named by
// TEST_DATABASE_URL (dropped afterwards); Redis from TEST_REDIS_URL with a key prefix of its own. Requests go
// through Fastify's inject(), i.e. the whole HTTP stack without a socket.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { bootstrap, ensureFirstAdmin } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import type { Services } from '../../src/services.ts';
import { modules } from '../../src/modules/index.ts';
import { describeMismatches, installResultCheck } from './result-check.ts';

export const ADMIN_EMAIL = 'admin@example.com';
export const ADMIN_PASSWORD = 'Admin-Passw0rd';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: { result: unknown; error: { message: string; code: number } | null };
  /** `body.result`, typed by the caller. */
  result: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read arbitrary result shapes
  cookies: Record<string, string>;
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Basic credentials: [user, password]. */
  basic?: [string, string];
  /** A logged-in browser: its cookies are sent; `csrf: true` also sends its token in X-CSRF-Token. */
  browser?: Browser;
  csrf?: boolean;
  headers?: Record<string, string>;
  /** Send a raw body (string) with this content type instead of JSON. */
  raw?: { body: string | Buffer; contentType: string };
  ip?: string;
}

/** A cookie jar, as a browser keeps one. */
export class Browser {
  cookies: Record<string, string> = {};

  get csrfToken(): string {
    return this.cookies.csrf_token ?? '';
  }

  cookieHeader(): string {
    return Object.entries(this.cookies)
      .map(([name, value]) => `${name}=${value}`)
      .join('; ');
  }

  take(setCookie: string | string[] | number | undefined): void {
    const list = Array.isArray(setCookie) ? setCookie : typeof setCookie === 'string' ? [setCookie] : [];
    for (const line of list) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = decodeURIComponent(pair.slice(eq + 1));
      if (value === '' || /max-age=0/i.test(line)) delete this.cookies[name];
      else this.cookies[name] = value;
    }
  }
}

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  adminToken: string;
  /** POST (or `options.method`) to `path` with `params` as JSON (or as a query string for GET). */
  call(path: string, params?: Record<string, unknown>, options?: CallOptions): Promise<Reply>;
  admin(path: string, params?: Record<string, unknown>): Promise<Reply>;
  /** Creates an active client through the admin API and returns its id, API token and password. */
  createClient(overrides?: Record<string, unknown>): Promise<{ id: number; token: string; email: string; password: string }>;
  /** Logs a client (or staff member) in and returns the browser holding the session. */
  login(kind: 'client' | 'staff', email: string, password: string, browser?: Browser): Promise<Browser>;
  close(): Promise<void>;
}

async function freshPostgresDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      // pg-pool's end() resolves before its sockets are gone; a forced drop would then kill them and the pool would
      // report the error as unhandled. Wait (briefly) until the database has no sessions left.
      for (let attempt = 0; attempt < 50; attempt++) {
        const { rows } = await client.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = $1', [name]);
        if (rows[0]?.n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

let clientCounter = 0;

export async function createTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const postgres = process.env.TEST_DATABASE_URL ? await freshPostgresDatabase(process.env.TEST_DATABASE_URL) : null;
  const redisUrl = process.env.TEST_REDIS_URL;
  const adminToken = randomBytes(16).toString('hex');
  const config = loadConfig({
    DATABASE_URL: postgres?.url ?? 'sqlite::memory:',
    TOLLGATE_SECRET: randomBytes(32).toString('hex'),
    DATA_DIR: '/tmp/tollgate-test',
    RATE_LIMIT_ENABLED: 'false',
    SCHEDULER: 'off',
    TOLLGATE_ADMIN_EMAIL: ADMIN_EMAIL,
    TOLLGATE_ADMIN_PASSWORD: ADMIN_PASSWORD,
    TOLLGATE_ADMIN_API_TOKEN: adminToken,
    ...(redisUrl !== undefined && redisUrl !== '' && { REDIS_URL: redisUrl, RATE_LIMIT_REDIS_PREFIX: `test:${randomBytes(6).toString('hex')}:` }),
    ...env,
  });
  const services = await bootstrap(config);
  await ensureFirstAdmin(services);
  const app = buildApp(services);
  // Every successful answer is checked against its action's declared result schema (CONTRACT §11).
  const mismatches = installResultCheck(app, modules);
  await app.ready();

  /** Fails loudly, naming the action and the path, when an answer does not match its declared result schema. */
  function assertResultsConform(): void {
    if (mismatches.length === 0) return;
    const found = describeMismatches(mismatches.splice(0));
    throw new Error(`An action answered a result its declared schema does not describe:\n${found}`);
  }

  async function call(path: string, params: Record<string, unknown> = {}, options: CallOptions = {}): Promise<Reply> {
    const method = options.method ?? 'POST';
    const headers: Record<string, string> = { ...options.headers };
    if (options.basic !== undefined) {
      headers.authorization = `Basic ${Buffer.from(`${options.basic[0]}:${options.basic[1]}`).toString('base64')}`;
    }
    if (options.browser !== undefined) {
      headers.cookie = options.browser.cookieHeader();
      if (options.csrf === true) headers['x-csrf-token'] = options.browser.csrfToken;
    }
    let payload: string | Buffer | undefined;
    let url = path;
    if (options.raw !== undefined) {
      payload = options.raw.body;
      headers['content-type'] = options.raw.contentType;
    } else if (method === 'GET') {
      const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
      if (query !== '') url = `${path}?${query}`;
    } else {
      payload = JSON.stringify(params);
      headers['content-type'] = 'application/json';
    }
    const response = await app.inject({
      method,
      url,
      headers,
      ...(payload !== undefined && { payload }),
      remoteAddress: options.ip ?? '127.0.0.1',
    });
    assertResultsConform();
    options.browser?.take(response.headers['set-cookie']);
    const jar = new Browser();
    jar.take(response.headers['set-cookie']);
    let body: Reply['body'];
    try {
      body = response.json();
    } catch {
      throw new Error(`Not JSON (${response.statusCode}): ${response.body.slice(0, 200)}`);
    }
    return { status: response.statusCode, headers: response.headers, body, result: body.result, cookies: jar.cookies };
  }

  const testApp: TestApp = {
    app,
    services,
    adminToken,
    call,
    admin: (path, params) => call(`/api/admin/${path}`, params, { basic: ['admin', adminToken] }),
    async createClient(overrides = {}) {
      clientCounter += 1;
      const email = `client${clientCounter}-${randomBytes(3).toString('hex')}@example.com`;
      const password = 'Client-Passw0rd';
      const created = await testApp.admin('client/create', { email, first_name: 'Test', last_name: `Client ${clientCounter}`, password, ...overrides });
      if (created.status !== 200) throw new Error(`client/create failed: ${JSON.stringify(created.body)}`);
      const id = created.result as number;
      const token = (await services.clients.apiToken(id));
      return { id, token, email: (overrides.email as string | undefined) ?? email, password };
    },
    async login(kind, email, password, browser = new Browser()) {
      const reply = await call(`/api/guest/${kind}/login`, { email, password }, { browser });
      if (reply.status !== 200) throw new Error(`${kind} login failed: ${JSON.stringify(reply.body)}`);
      return browser;
    },
    async close() {
      await app.close();
      await services.close();
      await postgres?.drop();
      // Answers that did not come through call() (inject or a real socket) are checked here.
      assertResultsConform();
    },
  };
  return testApp;
}
