// `npm run cli -- backup <file>` while a server writes to the same SQLite file: the copy is consistent, restores into
// a working Tollgate, is private (0600) and never overwrites a file. The data directory is 0700, the database 0600.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { bootstrap } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import { backupSqlite } from '../../src/db/backup.ts';
import type { Services } from '../../src/services.ts';

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { env: { PATH: process.env.PATH, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : (typeof error.code === 'number' ? error.code : 1), stdout, stderr });
    });
  });
}

describe('backup', () => {
  let root: string;
  let dataDir: string;
  let env: Record<string, string>;
  let services: Services;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'tollgate-backup-'));
    dataDir = join(root, 'data');
    env = { DATABASE_URL: `sqlite:${join(dataDir, 'tollgate.db')}`, DATA_DIR: dataDir, TOLLGATE_SECRET: randomBytes(32).toString('hex'), SCHEDULER: 'off' };
    services = await bootstrap(loadConfig(env));
  });
  afterAll(async () => {
    await services.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('creates the data directory 0700 and the database 0600', () => {
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dataDir, 'tollgate.db')).mode & 0o777).toBe(0o600);
  });

  it('copies the database while it is being written, and the copy restores into a working Tollgate', async () => {
    const app = buildApp(services);
    await app.ready();
    let written = 0;
    const writing = { on: true };
    // A writer that keeps committing while the backup runs.
    const writer = (async () => {
      while (writing.on) {
        await services.clients.create({ email: `w${written}@example.com`, first_name: 'W' });
        written++;
        // better-sqlite3 answers synchronously: yield to I/O so the CLI's exit can be heard.
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const target = join(root, 'copy.db');
    const result = await cli(['backup', target], env);
    writing.on = false;
    await writer;
    await app.close();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Wrote .*copy\.db \(\d+ pages\)\n$/);
    expect(statSync(target).mode & 0o777).toBe(0o600);

    const copy = new SqliteDatabase(target, { readonly: true });
    expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
    const copied = (copy.prepare('select count(*) as n from clients').get() as { n: number }).n;
    copy.close();
    expect(copied).toBeGreaterThan(0);
    expect(copied).toBeLessThanOrEqual(written);

    // Restore: a Tollgate started on the copy (same instance secret) serves its data.
    const restoredDir = join(root, 'restored');
    const restored = await bootstrap(loadConfig({ ...env, DATABASE_URL: `sqlite:${target}`, DATA_DIR: restoredDir }));
    try {
      const page = await restored.clients.list({ per_page: 1 });
      expect(page.total).toBe(copied);
    } finally {
      await restored.close();
    }
    // Two CLI processes start under tsx: on a busy CI machine that alone can take tens of seconds.
  }, 120_000);

  it('refuses to overwrite a file, and needs a file name', async () => {
    const existing = join(root, 'existing.db');
    writeFileSync(existing, 'keep me');
    const overwrite = await cli(['backup', existing], env);
    expect(overwrite.code).toBe(1);
    expect(overwrite.stderr).toContain('already exists');
    const missing = await cli(['backup'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('needs a file name');
    expect(existsSync(`${existing}.partial`)).toBe(false);
  }, 120_000);

  it('explains why it cannot copy an in-memory or PostgreSQL database', async () => {
    await expect(backupSqlite('sqlite::memory:', join(root, 'x.db'))).rejects.toThrow('in-memory');
    await expect(backupSqlite('postgres://localhost/x', join(root, 'y.db'))).rejects.toThrow('pg_dump');
  });
});
