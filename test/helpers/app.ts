// Builds a real Tollgate for a test file: SQLite in memory, or a fresh PostgreSQL database on the server named by
// TEST_DATABASE_URL (dropped afterwards), each a copy of the run's migrated template (test-database.ts); Redis from
// TEST_REDIS_URL with a key prefix of its own. Requests go through Fastify's inject(), i.e. the whole HTTP stack
// without a socket.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { bootstrap, ensureFirstAdmin } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import type { Services } from '../../src/services.ts';
import { modules } from '../../src/modules/index.ts';
import { describeMismatches, installResultCheck } from './result-check.ts';
import { fixtureEnv, freshPostgresDatabase, openSqliteCopy, templateFor } from './test-database.ts';

export { ADMIN_EMAIL, ADMIN_PASSWORD, freshPostgresDatabase } from './test-database.ts';

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

let clientCounter = 0;

export async function createTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  // A copy of the run's template when env lets us (test-database.ts); otherwise migrated here, as before.
  const template = templateFor(env);
  const serverUrl = process.env.TEST_DATABASE_URL;
  const postgres = serverUrl && !('DATABASE_URL' in env) ? await freshPostgresDatabase(serverUrl, template?.postgresTemplate ?? undefined) : null;
  const redisUrl = process.env.TEST_REDIS_URL;
  const adminToken = template?.adminToken ?? randomBytes(16).toString('hex');
  const config = loadConfig({
    DATABASE_URL: postgres?.url ?? 'sqlite::memory:',
    ...fixtureEnv(template?.secret ?? randomBytes(32).toString('hex'), adminToken),
    ...(redisUrl !== undefined && redisUrl !== '' && { REDIS_URL: redisUrl, RATE_LIMIT_REDIS_PREFIX: `test:${randomBytes(6).toString('hex')}:` }),
    ...env,
  });
  const sqliteCopy = template !== null && postgres === null ? openSqliteCopy(template) : undefined;
  const services = await bootstrap(config, sqliteCopy);
  await ensureFirstAdmin(services); // a no-op on a copy of the template, which holds the administrator already
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
