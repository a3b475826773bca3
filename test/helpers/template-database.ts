// vitest globalSetup: builds the run's template database once — migrated to the latest migration, with the fixture
// administrator (and its argon2 hash) in it — and hands it to every test file, which opens a copy of it
// (test/helpers/test-database.ts). Built from scratch in a new temp dir (and, on PostgreSQL, under a new name) at
// each run and at each watch-mode rerun, and removed afterwards: a changed migration can never meet a stale template.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import type { TestProject } from 'vitest/node';
import { bootstrap, ensureFirstAdmin } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import { dropPostgresDatabase, fixtureEnv, freshPostgresDatabase, waitUntilUnused, type DatabaseTemplate } from './test-database.ts';

/** Migrates the database at `databaseUrl` and creates the administrator, as the first createTestApp() of a file did. */
async function migrateWithAdministrator(databaseUrl: string, secret: string, adminToken: string): Promise<void> {
  const services = await bootstrap(loadConfig({ ...fixtureEnv(secret, adminToken), DATABASE_URL: databaseUrl }));
  try {
    await ensureFirstAdmin(services);
  } finally {
    await services.close();
  }
}

/** SQLite: built in a file, then written out serialized (rollback journal, as an in-memory database keeps it). */
async function buildSqliteTemplate(dir: string, secret: string, adminToken: string): Promise<string> {
  const file = join(dir, 'template.db');
  await migrateWithAdministrator(`sqlite:${file}`, secret, adminToken);
  const built = new SqliteDatabase(file);
  try {
    built.pragma('journal_mode = DELETE');
    const image = join(dir, 'template.image');
    writeFileSync(image, built.serialize());
    return image;
  } finally {
    built.close();
  }
}

async function buildPostgresTemplate(serverUrl: string, secret: string, adminToken: string): Promise<string> {
  const template = await freshPostgresDatabase(serverUrl, undefined, 'tollgate_template');
  try {
    await migrateWithAdministrator(template.url, secret, adminToken);
    await waitUntilUnused(serverUrl, template.name);
  } catch (error) {
    await template.drop();
    throw error;
  }
  return template.name;
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  // TEST_DATABASE_TEMPLATE=off: every test app migrates its own database, as before the template (to compare, or to
  // rule the template out).
  if (process.env.TEST_DATABASE_TEMPLATE === 'off') return undefined;
  const serverUrl = process.env.TEST_DATABASE_URL;
  let built: { template: DatabaseTemplate; dir: string } | null = null;

  async function removeTemplate(): Promise<void> {
    if (built === null) return;
    const { template, dir } = built;
    built = null;
    if (template.postgresTemplate !== null && serverUrl !== undefined) await dropPostgresDatabase(serverUrl, template.postgresTemplate);
    rmSync(dir, { recursive: true, force: true });
  }

  async function buildTemplate(): Promise<void> {
    await removeTemplate();
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-template-'));
    const secret = randomBytes(32).toString('hex');
    const adminToken = randomBytes(16).toString('hex');
    // Only the database the run uses: createTestApp() opens PostgreSQL whenever TEST_DATABASE_URL is set.
    const onPostgres = serverUrl !== undefined && serverUrl !== '';
    try {
      const template: DatabaseTemplate = {
        secret,
        adminToken,
        sqliteImage: onPostgres ? null : await buildSqliteTemplate(dir, secret, adminToken),
        postgresTemplate: onPostgres ? await buildPostgresTemplate(serverUrl, secret, adminToken) : null,
      };
      built = { template, dir };
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    project.provide('databaseTemplate', built.template);
  }

  await buildTemplate();
  // Watch mode: a rerun may follow an edited migration.
  project.onTestsRerun(buildTemplate);
  return removeTemplate;
}
