// Issue 27 items 1–2: the Python SDK (packages/sdk-python) against a real Tollgate server process. This file sets the
// stage — a server on SQLite in a temp folder, a verifier token, products and keys made through the API — and runs the
// SDK's own unittest files with Debian's python3, handing them the URLs, tokens and keys in environment variables.
// The Python tests stop and restart this Tollgate through a small control endpoint served here (POST /kill, /restart),
// since only this process owns it. Then the Developers page's Flask and FastAPI quick starts, as printed with this
// Tollgate's URL, run as servers guarded by the SDK.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sellKey, startTollgate, type TollgateProcess } from '../../packages/sdk/test/server.ts';
import { pythonQuickStarts } from '../../web/src/admin/quick-start-python.ts';

const SDK_DIR = resolve(import.meta.dirname, '../../packages/sdk-python');
// Debian's interpreter: it is the one python3-flask, python3-fastapi and python3-uvicorn install into (.ci/run). A
// pyenv python3 earlier on PATH would not see them.
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

let server: TollgateProcess;
let dataDir: string;
let control: Server;
let env: Record<string, string>;

/** `python3 -m unittest …` in the SDK folder; never rejects: the test reads the exit code and the output. */
function unittest(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(PYTHON, ['-m', 'unittest', ...args], { cwd: SDK_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

async function keyOf(config: Record<string, unknown>, disable = false): Promise<{ key: string; order_id: number }> {
  const { key, orderId } = await sellKey(server, config);
  if (disable) await server.admin('serviceapikey/update', { order_id: orderId, valid: false });
  return { key, order_id: orderId };
}

beforeAll(async () => {
  // Our own data folder, so the Python tests can read the events table (sqlite3, read-only) to count what was stored.
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-python-'));
  const database = join(dataDir, 'tollgate.db');
  server = await startTollgate({ DATA_DIR: dataDir, DATABASE_URL: `sqlite:${database}` });
  const verifier = (await server.admin('staff/verifier_create', { name: 'Python SDK tests' })).result as { token: string };

  const keys = {
    valid: await keyOf({ custom: { tier: 'pro', monthlyLimit: 100 } }),
    disabled: await keyOf({}, true),
    rate_limited: await keyOf({ rate_limit: { limit: 1, window_seconds: 1 } }),
    countdown: await keyOf({ enforce_limit: true, custom: { monthlyLimit: 7 } }),
    unenforced: await keyOf({ custom: { monthlyLimit: 2 } }),
    shared_quota: await keyOf({ enforce_limit: true, custom: { monthlyLimit: 30 } }),
    coalesced: await keyOf({}),
    reported: await keyOf({}),
    revoked: await keyOf({}),
    restarted: await keyOf({}),
    forked: await keyOf({}),
    metered: await keyOf({ meters: [{ code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' }] }),
    middleware: await keyOf({ custom: { tier: 'gold' } }),
    middleware_limited: await keyOf({ enforce_limit: true, custom: { monthlyLimit: 1 } }),
    flask: await keyOf({ custom: { tier: 'flask' } }),
    flask_revoked: await keyOf({}),
    fastapi: await keyOf({ custom: { tier: 'fastapi' } }),
    fastapi_revoked: await keyOf({}),
  };

  control = createServer((request, response) => {
    const act = request.url === '/kill' ? server.kill() : request.url === '/restart' ? server.restart() : Promise.reject(new Error(`unknown ${request.url}`));
    act.then(
      () => response.end('ok'),
      (error: unknown) => response.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((done) => control.listen(0, '127.0.0.1', done));

  // The Developers page's Python snippets, exactly as the page prints them for this instance.
  const quickStarts = Object.fromEntries(pythonQuickStarts(server.baseUrl).map(([heading, , code]) => [heading, code]));
  writeFileSync(join(dataDir, 'quickstart_flask.py'), `${quickStarts['Python (Flask)']!}\n`);
  writeFileSync(join(dataDir, 'quickstart_fastapi.py'), `${quickStarts['Python (FastAPI)']!}\n`);

  env = {
    PATH: process.env.PATH ?? '',
    TOLLGATE_QUICKSTART_DIR: dataDir,
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
    TOLLGATE_URL: server.baseUrl,
    TOLLGATE_VERIFIER_TOKEN: verifier.token,
    TOLLGATE_ADMIN_TOKEN: server.adminToken,
    TOLLGATE_DB: database,
    TOLLGATE_CONTROL_URL: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    TOLLGATE_KEYS: JSON.stringify(keys),
  };
}, 180_000);

afterAll(async () => {
  if (control !== undefined) await new Promise((done) => control.close(done));
  await server?.stop();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

describe('the Python SDK (packages/sdk-python) against a real Tollgate process', () => {
  it('passes its unittest suite: check, cache, revocation, restart, usage exactly once, failures, WSGI and ASGI', async () => {
    const { code, output } = await unittest(['discover', '-v', '-s', 'tests', '-t', '.', '-p', 'test_*.py'], 150_000);
    expect(code, output).toBe(0);
    // A test that skipped itself did not prove anything here.
    expect(output, output).not.toMatch(/skipped/i);
    expect(output).toMatch(/^OK$/m);
  }, 180_000);

  it("runs the Developers page's Flask and FastAPI quick starts as servers on Debian's python3: valid key passes, no key 401, revoked key 401", async () => {
    const { code, output } = await unittest(['discover', '-v', '-s', 'tests', '-t', '.', '-p', 'apps_*.py'], 90_000);
    expect(code, output).toBe(0);
    expect(output, output).not.toMatch(/skipped/i);
    expect(output).toMatch(/^OK$/m);
  }, 120_000);
});
