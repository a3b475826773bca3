// A throw-away MariaDB for the FOSSBilling import tests: a data directory in a temporary folder, initialised by
// mariadb-install-db, served by mariadbd on a free port with --skip-grant-tables (any user, no password), stopped and
// deleted by stop(). Debian's mariadb-server provides both programs (.ci/run installs it when missing).
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Connection } from 'mysql2/promise';

const run = promisify(execFile);
const MARIADBD = '/usr/sbin/mariadbd';

export interface MariaDb {
  port: number;
  /** mysql://root@127.0.0.1:<port>/<database> */
  url(database: string): string;
  /** A connection with multiple statements allowed (for the fixture's DDL). */
  connect(database?: string): Promise<Connection>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startMariaDb(): Promise<MariaDb> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-mariadb-'));
  const user = userInfo().username;
  await run('mariadb-install-db', ['--no-defaults', `--datadir=${dir}/data`, '--skip-test-db', '--auth-root-authentication-method=normal', `--user=${user}`]);
  const port = await freePort();
  const child = spawn(
    MARIADBD,
    [
      '--no-defaults', `--datadir=${dir}/data`, `--socket=${dir}/sock`, `--port=${port}`, '--bind-address=127.0.0.1', '--skip-grant-tables',
      `--pid-file=${dir}/pid`, `--log-error=${dir}/error.log`, `--user=${user}`, '--innodb-buffer-pool-size=128M', '--skip-log-bin',
      // The fixture is thrown away: no need to sync every commit to disk.
      '--innodb-flush-log-at-trx-commit=0', '--sql-mode=',
    ],
    { stdio: 'ignore' },
  );
  const mysql = await import('mysql2/promise');
  const connect = (database?: string): Promise<Connection> =>
    mysql.createConnection({ host: '127.0.0.1', port, user: 'root', multipleStatements: true, dateStrings: true, ...(database === undefined ? {} : { database }) });
  const started = Date.now();
  for (;;) {
    try {
      await (await connect()).end();
      break;
    } catch (error) {
      if (child.exitCode !== null || Date.now() - started > 30_000) {
        const log = await readFile(join(dir, 'error.log'), 'utf8').catch(() => '');
        throw new Error(`mariadbd did not start: ${String(error)}\n${log}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    port,
    url: (database) => `mysql://root@127.0.0.1:${port}/${database}`,
    connect,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
