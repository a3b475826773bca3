// A PHP-FPM pool for the PHP SDK's tests (Debian's php8.2-fpm), and requests to it through `cgi-fcgi` (libfcgi-bin):
// the way PHP apps run in production, where APCu is shared by the pool's workers and fastcgi_finish_request() exists.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export interface FpmAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  ms: number;
}

export interface FpmPool {
  /** One request: `params` are the FastCGI parameters ($_SERVER, and getenv() under FPM). */
  request(script: string, params: Record<string, string>): Promise<FpmAnswer>;
  log(): string;
  stop(): Promise<void>;
}

/** The php-fpm binary of the installed PHP (php-fpm8.2 on Debian 12), or null. */
export function fpmBinary(): string | null {
  const found = existsSync('/usr/sbin') ? readdirSync('/usr/sbin').filter((name) => /^php-fpm\d/.test(name)).toSorted() : [];
  return found.length === 0 ? null : join('/usr/sbin', found.at(-1)!);
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address() as { port: number };
  await new Promise((done) => probe.close(done));
  return port;
}

/** Starts a pool of `workers` static workers in `dir` (config, pid and logs there); resolves once it accepts. */
export async function startFpm(dir: string, workers = 2): Promise<FpmPool> {
  const binary = fpmBinary();
  if (binary === null) throw new Error('php-fpm is not installed: apt-get install php-fpm libfcgi-bin (.ci/run does)');
  const port = await freePort();
  const root = process.getuid?.() === 0;
  writeFileSync(
    join(dir, 'fpm.conf'),
    [
      '[global]',
      `pid = ${join(dir, 'fpm.pid')}`,
      `error_log = ${join(dir, 'fpm.log')}`,
      'daemonize = no',
      '[app]',
      `listen = 127.0.0.1:${port}`,
      'pm = static',
      `pm.max_children = ${workers}`,
      // As root (CI containers) FPM needs a user for its workers; otherwise it runs them as whoever started it.
      ...(root ? ['user = root', 'group = root'] : []),
      'catch_workers_output = yes',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(binary, ['-y', join(dir, 'fpm.conf'), ...(root ? ['-R'] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const pool: FpmPool = {
    request(script, params) {
      const started = Date.now();
      return new Promise((done, fail) => {
        const env = { PATH: process.env.PATH ?? '', SCRIPT_FILENAME: script, REQUEST_METHOD: 'GET', REMOTE_ADDR: '127.0.0.1', ...params };
        execFile('cgi-fcgi', ['-bind', '-connect', `127.0.0.1:${port}`], { env, timeout: 20_000 }, (error, stdout) => {
          if (error !== null) return fail(new Error(`cgi-fcgi: ${error.message}\n${log}`));
          const [head = '', ...rest] = stdout.split(/\r?\n\r?\n/);
          const headers: Record<string, string> = {};
          for (const line of head.split(/\r?\n/)) {
            const at = line.indexOf(':');
            if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
          }
          done({ status: Number(/^\d+/.exec(headers.status ?? '200')?.[0] ?? 200), headers, body: rest.join('\n\n'), ms: Date.now() - started });
        });
      });
    },
    log: () => log,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGQUIT'); // FPM's graceful stop: workers finish what they are doing (a late usage send) first
      await exited;
    },
  };
  for (let attempt = 0; ; attempt++) {
    const up = await new Promise<boolean>((done) => {
      const probe = createServer();
      probe.once('error', () => done(true)); // the port is taken: FPM listens
      probe.listen(port, '127.0.0.1', () => probe.close(() => done(false)));
    });
    if (up) return pool;
    if (attempt > 100 || child.exitCode !== null) {
      await pool.stop();
      throw new Error(`php-fpm did not start: ${log}`);
    }
    await new Promise((done) => setTimeout(done, 50));
  }
}
