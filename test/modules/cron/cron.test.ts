// Scheduled jobs: renewal invoices, suspension, cancellation after the grace period, free renewals, guest cart
// clean-up, idempotency, admin/cron/run, the in-process scheduler and `npm run cron`.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPeriod } from '../../../src/lib/periods.ts';
import { isoSeconds } from '../../../src/lib/time.ts';
import { cronStarter } from '../../../src/modules/cron/service.ts';
import { Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, makeProduct } from '../../helpers/selling-fixtures.ts';

const DAY = 86_400_000;

describe('scheduled jobs', () => {
  let t: TestApp;
  let monthly: number;
  beforeAll(async () => {
    t = await createTestApp({ INVOICE_DAYS_BEFORE_EXPIRY: '7', CANCEL_SUSPENDED_AFTER_DAYS: '30' });
    monthly = await makeProduct(t);
  });
  afterAll(async () => {
    await t.close();
  });

  async function activeOrder(productId = monthly): Promise<{ id: number; expires: string; clientId: number }> {
    const client = await t.createClient();
    const id = (await t.admin('order/create', { client_id: client.id, product_id: productId, period: '1M', activate: true })).result as number;
    const expires = (await t.admin('order/get', { id })).result.expires_at as string;
    return { id, expires, clientId: client.id };
  }

  it('invoices, suspends and then cancels an unpaid order, each exactly once', async () => {
    const order = await activeOrder();
    const expiry = Date.parse(order.expires);
    const run = (at: number) => t.services.cron.run(new Date(at));

    await run(expiry - 8 * DAY);
    expect((await t.admin('invoice/get_list', { client_id: order.clientId })).result.total).toBe(0);
    await run(expiry - 6 * DAY);
    await run(expiry - 5 * DAY);
    const invoices = (await t.admin('invoice/get_list', { client_id: order.clientId, status: 'unpaid' })).result;
    expect(invoices.total).toBe(1);
    expect(invoices.list[0].items[0]).toMatchObject({ order_id: order.id, task: 'renew' });

    await run(expiry + 1000);
    await run(expiry + 2000);
    const suspended = (await t.admin('order/get', { id: order.id })).result;
    expect(suspended).toMatchObject({ status: 'suspended', reason: 'Non-payment' });
    expect((await t.admin('invoice/get_list', { client_id: order.clientId })).result.total).toBe(1);

    await run(Date.parse(suspended.suspended_at) + 29 * DAY);
    expect((await t.admin('order/get', { id: order.id })).result.status).toBe('suspended');
    await run(Date.parse(suspended.suspended_at) + 31 * DAY);
    const canceled = (await t.admin('order/get', { id: order.id })).result;
    expect(canceled.status).toBe('canceled');
    expect(canceled.unpaid_invoice_id).toBeNull();
    // The renewal it no longer owes is canceled with it.
    expect((await t.admin('invoice/get', { id: invoices.list[0].id })).result.status).toBe('canceled');
    const again = await run(Date.parse(suspended.suspended_at) + 32 * DAY);
    expect(again).toMatchObject({ renewal_invoices: 0, suspended: 0, canceled: 0 });
    const history = (await t.admin('order/history', { id: order.id })).result as Array<{ to_status: string }>;
    expect(history.map((row) => row.to_status)).toEqual(['pending_setup', 'active', 'suspended', 'canceled']);
  });

  it('issues the invoice and suspends in one run when the order is already past expiry', async () => {
    const order = await activeOrder();
    const report = await t.services.cron.run(new Date(Date.parse(order.expires) + DAY));
    expect(report.renewal_invoices).toBeGreaterThanOrEqual(1);
    expect((await t.admin('order/get', { id: order.id })).result.status).toBe('suspended');
    expect((await t.admin('invoice/get_list', { client_id: order.clientId, status: 'unpaid' })).result.total).toBe(1);
  });

  it('renews free recurrent orders at expiry instead of suspending them', async () => {
    const free = await makeProduct(t, { pricing: { type: 'recurrent', recurrent: { '1M': { price: '0' } } } });
    const order = await activeOrder(free);
    await t.services.cron.run(new Date(Date.parse(order.expires) - 3 * DAY));
    expect((await t.admin('invoice/get_list', { client_id: order.clientId })).result.total).toBe(0);
    await t.services.cron.run(new Date(Date.parse(order.expires) + 1000));
    const renewed = (await t.admin('order/get', { id: order.id })).result;
    expect(renewed.status).toBe('active');
    expect(renewed.expires_at).toBe(isoSeconds(addPeriod(new Date(Date.parse(order.expires) + 1000), '1M')));
  });

  it('purges guest carts whose session has ended', async () => {
    const browser = new Browser();
    await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M' }, { browser });
    await t.services.cron.run(new Date());
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items).toHaveLength(1);
    await t.services.db.deleteFrom('sessions').where('subject_type', '=', 'guest').execute();
    expect((await t.services.cron.run(new Date())).carts_purged).toBeGreaterThanOrEqual(1);
    const orphans = await t.services.db.selectFrom('cart_items').select('id').where('client_id', 'is', null).execute();
    expect(orphans).toEqual([]);
  });

  it('runs through admin/cron/run', async () => {
    const reply = await t.admin('cron/run');
    expect(reply.result).toEqual({ renewal_invoices: 0, renewed_free: 0, suspended: 0, canceled: 0, carts_purged: 0, invoice_reminders: 0, usage_invoices: 0, plan_changes_voided: 0, credits_expired: 0, trial_reminders: 0, trials_ended: 0, failed: 0, audit_entries_pruned: 0 });
    const client = await t.createClient();
    expectError(await t.call('/api/admin/cron/run', {}, { basic: ['client', client.token] }), 203, 401);
  });

  it('schedules runs on an unref’d timer and stops on close', async () => {
    const runs: Date[] = [];
    const closers: Array<() => Promise<void>> = [];
    const start = cronStarter(
      {
        run: async (now: Date) => {
          runs.push(now);
          return { renewal_invoices: 0, renewed_free: 0, suspended: 0, canceled: 0, carts_purged: 0, invoice_reminders: 0, usage_invoices: 0, plan_changes_voided: 0, credits_expired: 0, trial_reminders: 0, trials_ended: 0, failed: 0, audit_entries_pruned: 0 };
        },
      },
      (task) => closers.push(task),
      () => {},
      20,
    );
    start();
    await new Promise((resolve) => setTimeout(resolve, 90));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const close of closers) await close();
    const stopped = runs.length;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(runs.length).toBe(stopped);
  });

  it('is started by the server unless SCHEDULER=off', async () => {
    const on = await createTestApp({ SCHEDULER: 'on' });
    try {
      // The test app runs with SCHEDULER=off; the only task the setting adds is the scheduler's.
      expect(on.services.startTasks.length - t.services.startTasks.length).toBe(1);
    } finally {
      await on.close();
    }
  });

  it('is what `npm run cron` runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-cron-'));
    try {
      const { stdout } = await promisify(execFile)('npm', ['run', '--silent', 'cron'], {
        env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, DATA_DIR: dir, SCHEDULER: 'off' },
        timeout: 60_000,
      });
      expect(JSON.parse(stdout.trim())).toMatchObject({ renewal_invoices: 0, suspended: 0, canceled: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
