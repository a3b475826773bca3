// Issue 8 item 9 (CONTRACT §13): the SQLite database and its WAL sit next to the secret that decrypts them, so the
// data directory is 0700 and the database, -wal, -shm and secret files 0600 — when created, and tightened at start
// when an older version left them looser.
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bootstrap } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('file modes of the embedded database', () => {
  const roots: string[] = [];
  afterAll(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  /** Starts Tollgate on `<root>/data` as `npm start` would (no TOLLGATE_SECRET: the secret file is generated). */
  async function start(root: string) {
    const dataDir = join(root, 'data');
    const services = await bootstrap(loadConfig({ DATA_DIR: dataDir, DATABASE_URL: `sqlite:${join(dataDir, 'tollgate.db')}`, SCHEDULER: 'off' }));
    // A write, so the WAL and shared-memory files exist.
    await services.db.insertInto('admin_groups').values({ name: 'x', permissions: '[]', created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z' }).execute();
    return { services, dataDir, db: join(dataDir, 'tollgate.db') };
  }

  it('a fresh start creates the directory 0700 and the database, WAL, SHM and secret 0600', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-modes-'));
    roots.push(root);
    const previous = process.umask(0o022);
    try {
      const { services, dataDir, db } = await start(root);
      expect(modeOf(dataDir)).toBe(0o700);
      for (const file of [db, `${db}-wal`, `${db}-shm`, join(dataDir, 'secret')]) expect(modeOf(file), file).toBe(0o600);
      await services.close();
    } finally {
      process.umask(previous);
    }
  });

  it('looser modes left by an older version are tightened at start', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-modes-'));
    roots.push(root);
    const first = await start(root);
    await first.services.close();
    mkdirSync(first.dataDir, { recursive: true });
    chmodSync(first.dataDir, 0o755);
    for (const file of [first.db, `${first.db}-wal`, `${first.db}-shm`, join(first.dataDir, 'secret')]) {
      closeSync(openSync(file, 'a'));
      chmodSync(file, 0o644);
    }
    const again = await start(root);
    expect(modeOf(again.dataDir)).toBe(0o700);
    for (const file of [again.db, `${again.db}-wal`, `${again.db}-shm`, join(again.dataDir, 'secret')]) expect(modeOf(file), file).toBe(0o600);
    await again.services.close();
  });
});
