// Issue 27 items 1–2, the PHP SDK (packages/sdk-php): its own PHP test scripts (packages/sdk-php/tests/run.php, a tiny
// runner of their own: PHPUnit cannot be downloaded here) against a real Tollgate process, a fault server for the
// failures (garbage, slow, 502, lost answers), and "a plain PHP app guarded by the SDK" served by `php -S`.
// The Developers page's PHP quick start is served by `php -S` as printed, against the same Tollgate; the same app runs
// under a PHP-FPM pool (APCu shared by its workers, usage sent after the response); the SDK installs with Composer by
// path and by VCS.
// The PHP runs go in three groups: `main` with Tollgate up; `outage` after Tollgate is killed; `restarted` after it
// is started again on the same port and data. What only the database can tell (each tracked event stored exactly once,
// including one tracked during the outage and sent by a later request) is checked here.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sellKey, startTollgate, type TollgateProcess } from '../../packages/sdk/test/server.ts';
import { phpQuickStart } from '../../web/src/admin/quick-start-php.ts';
import { startFaultServer, type FaultServer } from './sdk-php-faults.ts';
import { startFpm } from './sdk-php-fpm.ts';

const SDK = resolve(import.meta.dirname, '../../packages/sdk-php');

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address() as { port: number };
  await new Promise((done) => probe.close(done));
  return port;
}

/** `php tests/run.php <group>`: resolves with its output, whatever its exit code (the caller asserts on both). */
function runPhp(group: string, env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    // APCu on for the CLI, so the tests can exercise the shared cache as well as the per-request one.
    execFile('php', ['-d', 'apc.enable_cli=1', 'tests/run.php', group], { cwd: SDK, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      done({ code, output: `${stdout}${stderr}` });
    });
  });
}

interface PhpServer {
  url: string;
  log: () => string;
  stop: () => Promise<void>;
}

/** `php -S` on a free port with `script` as the router (every request goes through it); resolves once it answers. */
async function phpServer(cwd: string, script: string, env: Record<string, string>): Promise<PhpServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn('php', ['-d', 'apc.enable_cli=1', '-S', `127.0.0.1:${port}`, script], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await exited;
  };
  for (let attempt = 0; !(await fetch(url).then(() => true, () => false)); attempt++) {
    if (attempt > 200 || child.exitCode !== null) {
      await stop();
      throw new Error(`php -S ${script} did not start: ${log}`);
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  return { url, log: () => log, stop };
}

describe('the PHP SDK against a real Tollgate process (issue 27)', () => {
  let server: TollgateProcess;
  let faults: FaultServer;
  let app: PhpServer | null = null;
  const appLog = () => app?.log() ?? '';
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-php-'));
  const eventsFile = join(dataDir, 'tracked-events.jsonl');
  let env: Record<string, string> = {};

  beforeAll(async () => {
    server = await startTollgate({ DATA_DIR: dataDir, DATABASE_URL: `sqlite:${join(dataDir, 'tollgate.db')}` });
    const verifier = (await server.admin('staff/verifier_create', { name: 'PHP SDK tests' })).result as { token: string };
    const valid = await sellKey(server, { custom: { tier: 'pro' }, meters: [{ code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' }] });
    const disabled = await sellKey(server, { custom: { tier: 'pro' } });
    await server.admin('serviceapikey/update', { order_id: disabled.orderId, valid: false });
    const limited = await sellKey(server, { enforce_limit: true, custom: { monthlyLimit: 3 } });
    const sharedLimit = await sellKey(server, { enforce_limit: true, custom: { monthlyLimit: 4 } });
    const rated = await sellKey(server, { rate_limit: { limit: 1, window_seconds: 60 } });
    faults = await startFaultServer(() => server.baseUrl);
    env = {
      TOLLGATE_URL: server.baseUrl,
      TOLLGATE_VERIFIER_TOKEN: verifier.token,
      TOLLGATE_ADMIN_TOKEN: server.adminToken,
      FAULT_URL: faults.url,
      KEYS: JSON.stringify({ valid, disabled, limited, 'shared-limit': sharedLimit, rated }),
      EVENTS_FILE: eventsFile,
    };
    // The plain PHP app: every request goes through tests/app/index.php, which guards it with the SDK.
    app = await phpServer(SDK, 'tests/app/index.php', env);
    env.APP_URL = app.url;
  }, 180_000);

  afterAll(async () => {
    await app?.stop();
    await faults?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('passes its PHP tests with Tollgate up: checks, cache, usage exactly once, failures, middleware, the php -S app', async () => {
    const { code, output } = await runPhp('main', env);
    expect(code, `${output}\n--- php -S app log ---\n${appLog()}`).toBe(0);
  }, 90_000);

  it("serves the Developers page's PHP quick start as printed, with this instance's URL: it guards like the Node middleware", async () => {
    const dir = join(dataDir, 'quick-start');
    mkdirSync(join(dir, 'vendor'), { recursive: true });
    // Where Composer would put its autoloader: the SDK's own, which loads the same classes and guard().
    writeFileSync(join(dir, 'vendor/autoload.php'), `<?php\nrequire ${JSON.stringify(join(SDK, 'autoload.php'))};\n`);
    const [heading, language, code] = phpQuickStart(server.baseUrl);
    expect([heading, language]).toEqual(['PHP', 'php']);
    writeFileSync(join(dir, 'index.php'), code);
    const keys = JSON.parse(env.KEYS!) as Record<string, { key: string }>;
    const quickStart = await phpServer(dir, 'index.php', { TOLLGATE_VERIFIER_TOKEN: env.TOLLGATE_VERIFIER_TOKEN! });
    try {
      const valid = await fetch(quickStart.url, { headers: { 'x-api-key': keys.valid!.key } });
      expect(valid.status, quickStart.log()).toBe(200);
      expect(await valid.json()).toEqual({ tier: 'pro' });
      const none = await fetch(quickStart.url);
      expect(none.status).toBe(401);
      expect(await none.json()).toMatchObject({ error: { code: 'MISSING_KEY' } });
      const disabled = await fetch(quickStart.url, { headers: { authorization: `Bearer ${keys.disabled!.key}` } });
      expect(disabled.status).toBe(401);
      expect(await disabled.json()).toMatchObject({ error: { code: 'INVALID_KEY' } });
    } finally {
      await quickStart.stop();
    }
  }, 30_000);

  it("under PHP-FPM: APCu shares a verdict between the pool's requests, and usage is sent after the response is finished", async () => {
    const keys = JSON.parse(env.KEYS!) as Record<string, { key: string; orderId: number }>;
    const dir = join(dataDir, 'fpm');
    mkdirSync(dir);
    const pool = await startFpm(dir);
    const script = join(SDK, 'tests/app/index.php');
    // FastCGI parameters: the request's headers and URI, and the app's settings (getenv() reads them under FPM).
    const base = { TOLLGATE_VERIFIER_TOKEN: env.TOLLGATE_VERIFIER_TOKEN!, HTTP_X_API_KEY: keys.valid!.key, REQUEST_URI: '/data' };
    const usage = async () => ((await server.admin('serviceapikey/usage', { order_id: keys.valid!.orderId })).result as { total: number }).total;
    const calls = async (label: string, action: string) =>
      ((await (await fetch(`${faults.url}/log/${label}`)).json()) as Array<{ path: string; answer: { result: unknown } }>).filter((call) => call.path.endsWith(action));
    try {
      const before = await usage();
      for (let i = 0; i < 6; i++) {
        const answer = await pool.request(script, { ...base, TOLLGATE_URL: `${faults.url}/via/fpm`, TOLLGATE_CACHE_TTL: '30' });
        expect(answer.status, `${answer.body}\n${pool.log()}`).toBe(200);
        expect(JSON.parse(answer.body)).toEqual({ tier: 'pro', reason: 'VALID' });
      }
      expect(await calls('fpm', 'get_info')).toHaveLength(1);
      // Five uses answered from APCu, each reported when its request ended: all six counted, once.
      await expect.poll(usage, { timeout: 5000, interval: 100 }).toBe(before + 6);

      // Usage Tollgate takes 1.5 s to receive: the client has its answer long before (fastcgi_finish_request).
      const tracked = await pool.request(script, { ...base, REQUEST_URI: '/track?value=21', QUERY_STRING: 'value=21', TOLLGATE_URL: `${faults.url}/delay-writes/fpm-late` });
      expect(tracked.status, tracked.body).toBe(200);
      expect(tracked.ms).toBeLessThan(1000);
      const event = (JSON.parse(tracked.body) as { event: string }).event;
      appendFileSync(eventsFile, `${JSON.stringify({ id: event, value: 21 })}\n`);
      await expect.poll(async () => (await calls('fpm-late', 'usage/ingest')).map((call) => call.answer.result), { timeout: 5000, interval: 100 }).toEqual([{ accepted: 1, duplicates: 0, rejected: [] }]);
    } finally {
      await pool.stop();
    }
  }, 60_000);

  it('installs with Composer by path and by VCS (a repository with the package at its root), offline, and checks a key from there', async () => {
    const keys = JSON.parse(env.KEYS!) as Record<string, { key: string }>;
    const tools = { PATH: process.env.PATH ?? '', HOME: dataDir, COMPOSER_HOME: join(dataDir, 'composer-home'), COMPOSER_ALLOW_SUPERUSER: '1', COMPOSER_NO_INTERACTION: '1' };
    const run = (file: string, args: string[], cwd: string, extra: Record<string, string> = {}) =>
      new Promise<string>((done, fail) =>
        execFile(file, args, { cwd, env: { ...tools, ...extra }, timeout: 60_000 }, (error, stdout, stderr) => (error === null ? done(stdout) : fail(new Error(`${file} ${args.join(' ')}: ${stdout}${stderr}`)))),
      );
    // By VCS: a repository holding the SDK at its root, as `git subtree split --prefix packages/sdk-php` makes one.
    const vcs = join(dataDir, 'sdk-php-repo');
    cpSync(SDK, vcs, { recursive: true });
    await run('git', ['init', '-q'], vcs);
    await run('git', ['add', '-A'], vcs);
    await run('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', 'commit', '-qm', 'tollgate/sdk'], vcs);
    await run('git', ['tag', 'v0.1.0'], vcs);
    const installs: Array<[string, unknown]> = [
      ['path', { repositories: [{ type: 'path', url: SDK, options: { symlink: false } }, { 'packagist.org': false }], require: { 'tollgate/sdk': '*@dev' } }],
      ['vcs', { repositories: [{ type: 'vcs', url: vcs }, { 'packagist.org': false }], require: { 'tollgate/sdk': '^0.1' } }],
    ];
    for (const [how, manifest] of installs) {
      const project = join(dataDir, `composer-${how}`);
      mkdirSync(project);
      writeFileSync(join(project, 'composer.json'), JSON.stringify(manifest));
      await run('composer', ['install', '--no-progress'], project);
      const script = 'require "vendor/autoload.php"; $c = new Tollgate\\Client(getenv("U"), getenv("T")); echo json_encode([$c->check(getenv("K"))->reason, function_exists("Tollgate\\guard")]);';
      const out = await run('php', ['-r', script], project, { U: server.baseUrl, T: env.TOLLGATE_VERIFIER_TOKEN!, K: keys.valid!.key });
      expect(JSON.parse(out), how).toEqual(['VALID', true]);
    }
  }, 60_000);

  it('passes its PHP tests with Tollgate killed (UNAVAILABLE, failOpen, the app answers 503), then restarted', async () => {
    await server.kill();
    const down = await runPhp('outage', env);
    expect(down.code, `${down.output}\n--- php -S app log ---\n${appLog()}`).toBe(0);
    await server.restart();
    const back = await runPhp('restarted', env);
    expect(back.code, `${back.output}\n--- php -S app log ---\n${appLog()}`).toBe(0);
  }, 120_000);

  it("its README's PHP snippets are valid PHP (php -l)", async () => {
    const readme = readFileSync(join(SDK, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```php\n([\s\S]*?)```/g)].map((match) => match[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    for (const block of blocks) {
      const file = join(dataDir, 'snippet.php');
      writeFileSync(file, `<?php\n${block}`);
      const lint = await new Promise<string>((done) => execFile('php', ['-l', file], (error, stdout, stderr) => done(error === null ? 'ok' : `${stdout}${stderr}`)));
      expect(lint, block).toBe('ok');
    }
  });

  it('stored every event the PHP tests tracked exactly once, with its value (also the one tracked during the outage)', () => {
    const tracked = readFileSync(eventsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { id: string; value: number });
    expect(tracked.length).toBeGreaterThan(5);
    const db = new SqliteDatabase(join(dataDir, 'tollgate.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT event_id AS id, COUNT(*) AS n, MAX(value) AS value FROM usage_events GROUP BY event_id').all() as Array<{ id: string; n: number; value: number }>;
      const stored = new Map(rows.map((row) => [row.id, row]));
      for (const event of tracked) expect(stored.get(event.id), event.id).toEqual({ id: event.id, n: 1, value: event.value });
    } finally {
      db.close();
    }
  });
});
