// Each test file's own database, copied from a template that is migrated once per run with the fixture administrator
// already in it (test/helpers/template-database.ts, vitest's globalSetup): on SQLite an in-memory database opened
// from the template's serialized image, on PostgreSQL a database cloned with CREATE DATABASE … TEMPLATE. So a file
// pays neither the migrations nor the administrator's argon2 hash, and still gets a database no other file sees.
// A test app given its own DATABASE_URL, secret or administrator gets a database migrated from scratch, as before.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { inject } from 'vitest';
import { openSqliteImage, type DatabaseHandle } from '../../src/db/database.ts';

export const ADMIN_EMAIL = 'admin@example.com';
export const ADMIN_PASSWORD = 'Admin-Passw0rd';

/** What the globalSetup hands every test file (vitest's provide / inject). */
export interface DatabaseTemplate {
  /** The instance secret the administrator's API token is hashed and encrypted with: every copy runs with it. */
  secret: string;
  adminToken: string;
  /** A file holding the serialized SQLite template; null when the run is on PostgreSQL. */
  sqliteImage: string | null;
  /** The template database on TEST_DATABASE_URL's server; null when the run is on SQLite. */
  postgresTemplate: string | null;
}

declare module 'vitest' {
  export interface ProvidedContext {
    databaseTemplate: DatabaseTemplate;
  }
}

/** The settings of the fixture Tollgate; the template is built with them, so every copy must run with them too. */
export function fixtureEnv(secret: string, adminToken: string): Record<string, string> {
  return {
    TOLLGATE_SECRET: secret,
    DATA_DIR: '/tmp/tollgate-test',
    RATE_LIMIT_ENABLED: 'false',
    SCHEDULER: 'off',
    TOLLGATE_ADMIN_EMAIL: ADMIN_EMAIL,
    TOLLGATE_ADMIN_PASSWORD: ADMIN_PASSWORD,
    TOLLGATE_ADMIN_API_TOKEN: adminToken,
  };
}

/** Settings that change what the template holds (the database itself, the administrator and how it is stored, the default currency the first start seeds). */
const TEMPLATE_SETTINGS = ['DATABASE_URL', 'TOLLGATE_SECRET', 'TOLLGATE_ADMIN_EMAIL', 'TOLLGATE_ADMIN_PASSWORD', 'TOLLGATE_ADMIN_API_TOKEN', 'CURRENCY'];

/**
 * The run's template when a test app with `env` can start from it; null when `env` sets what the template fixes, or
 * outside a vitest run that built one (bench/ and scripts/ use these helpers too; so does the mutation config).
 */
export function templateFor(env: Record<string, string>): DatabaseTemplate | null {
  if (TEMPLATE_SETTINGS.some((name) => name in env)) return null;
  if (process.env.VITEST === undefined) return null;
  try {
    return inject('databaseTemplate') ?? null;
  } catch {
    return null; // vitest is loaded but not running this file (a script importing the helpers)
  }
}

let sqliteImage: { path: string; image: Buffer } | undefined;

/** A new in-memory SQLite database holding what the template holds. */
export function openSqliteCopy(template: DatabaseTemplate): DatabaseHandle | undefined {
  if (template.sqliteImage === null) return undefined;
  if (sqliteImage?.path !== template.sqliteImage) sqliteImage = { path: template.sqliteImage, image: readFileSync(template.sqliteImage) };
  return openSqliteImage(sqliteImage.image);
}

/**
 * Waits (briefly) until no session is connected to database `name`. pg-pool's end() resolves before its sockets are
 * gone, and what comes next needs the database alone: a forced DROP would kill those sockets (and the pool report
 * the error as unhandled); CREATE DATABASE … TEMPLATE refuses a template that anyone is connected to.
 */
async function untilUnused(client: pg.Client, name: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const { rows } = await client.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = $1', [name]);
    if (rows[0]?.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function waitUntilUnused(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await untilUnused(client, name);
  } finally {
    await client.end();
  }
}

export async function dropPostgresDatabase(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await untilUnused(client, name);
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** A new database on the server named by `serverUrl`: empty, or a copy of database `template`. */
export async function freshPostgresDatabase(
  serverUrl: string,
  template?: string,
  prefix = 'tollgate_test',
): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}${template === undefined ? '' : ` TEMPLATE ${template}`}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => dropPostgresDatabase(serverUrl, name) };
}
