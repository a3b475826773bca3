// A free trial that ends while the server is down (issue 24, "Bad input and safety"): a client starts a 7-day trial
// without card; the server is stopped before the trial ends and started again (as `npm start` runs it, the scheduler
// on) a day after the end. The server's scheduler — its first pass a minute after the start — ends the trial once:
// the first invoice is issued, the order is suspended and the key answers TRIAL_ENDED; no late reminder is sent. On a
// SQLite file the test's app writes and the restarted server opens.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import SqliteDatabase from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createTestApp } from '../helpers/app.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';

const DAY = 86_400_000;
const dir = mkdtempSync(join(tmpdir(), 'tollgate-trial-downtime-'));
const file = join(dir, 'tollgate.db');

describe('a free trial that ended while the server was down', () => {
  let server: ChildProcess | null = null;

  afterAll(async () => {
    vi.useRealTimers();
    if (server !== null && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('is ended at the next start: the invoice issued once, the key TRIAL_ENDED, no late reminder', async () => {
    // Eight days ago: the plan is set up and the client starts its trial (it ended yesterday).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 8 * DAY });
    const t = await createTestApp({ DATABASE_URL: `sqlite:${file}` });
    const plan = await makeProduct(t, { title: 'AI API', type: 'apikey', config: { trial: { days: 7, requires_card: false } } });
    const client = await t.createClient();
    expect((await asClient(t, client.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const checkout = await asClient(t, client.token, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    const orderId = checkout.result.order_id as number;
    const key = (await asClient(t, client.token, 'order/service', { id: orderId })).result.api_key as string;
    const secret = t.services.config.secret ?? '';
    // The server goes down the same day; nothing runs meanwhile.
    await t.close();
    vi.useRealTimers();

    // Started again today, as `npm start` runs it.
    const output: string[] = [];
    server = spawn(process.execPath, ['scripts/start.mjs'], {
      env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, DATABASE_URL: `sqlite:${file}`, TOLLGATE_SECRET: secret, SMTP_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    let port = 0;
    createInterface({ input: server.stdout! }).on('line', (line) => {
      output.push(line);
      const found = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (found !== null) port = Number(found[1]);
    });
    const read = new SqliteDatabase(file, { readonly: true });
    const orderRow = () => read.prepare('SELECT status, reason, trial_state FROM orders WHERE id = ?').get(orderId) as { status: string; reason: string | null; trial_state: string };
    try {
      // The scheduler's first pass comes a minute after the start.
      await vi.waitFor(
        () => {
          if (server!.exitCode !== null) throw new Error(`the server exited\n${output.join('')}`);
          expect(orderRow()).toMatchObject({ status: 'suspended', reason: 'Free trial ended', trial_state: 'ended' });
        },
        { timeout: 100_000, interval: 500 },
      );
      const invoices = read.prepare('SELECT status FROM invoices WHERE client_id = ?').all(client.id);
      expect(invoices).toEqual([{ status: 'unpaid' }]);
      const reminders = read.prepare("SELECT id FROM emails WHERE client_id = ? AND template = 'order_trial_will_end'").all(client.id);
      expect(reminders).toEqual([]);
    } finally {
      read.close();
    }
    const reply = await fetch(`http://127.0.0.1:${port}/api/guest/serviceapikey/get_info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key }) });
    expect(((await reply.json()) as { result: unknown }).result).toMatchObject({ valid: 0, reason: 'TRIAL_ENDED' });
  }, 150_000);
});
