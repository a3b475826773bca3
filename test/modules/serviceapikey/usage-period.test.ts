// Issue 21 item 5: a usage period ends when its order's period ends. Staff moving `expires_at` (admin/order/update) or
// a plan change that starts a new period now moves the open `billing_period` usage period's end with it, so its
// overage is billed at the right close, once; plans priced by use default to `usage_period: billing_period`, plans
// saved before keep theirs (migration 021). The clock is faked (Date only). Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../../src/db/database.ts';
import { migrations } from '../../../src/db/migrations/index.ts';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { openEnd } from '../../../src/modules/serviceapikey/usage/period-move.ts';
import { createTestApp, freshPostgresDatabase, type TestApp } from '../../helpers/app.ts';
import { expectError } from '../../helpers/assertions.ts';
import { asClient, asStaff, makeProduct, MONTHLY, staffWith } from '../../helpers/selling-fixtures.ts';

const DAY = 86_400_000;
const ms = (iso: string): number => Date.parse(iso);

describe('where the open period ends (openEnd)', () => {
  const start = ms('2027-01-10T00:00:00Z');
  const now = ms('2027-01-20T00:00:00Z');
  it('follows the order: extended, shortened, expired, moved by whole periods, restarted now', () => {
    expect(openEnd(start, ms('2027-02-24T00:00:00Z'), '1M', now)).toBe(ms('2027-02-24T00:00:00Z'));
    expect(openEnd(start, ms('2027-02-24T00:00:00Z'), '1M', ms('2027-02-05T00:00:00Z'))).toBe(ms('2027-02-24T00:00:00Z'));
    expect(openEnd(start, ms('2027-02-03T00:00:00Z'), '1M', now)).toBe(ms('2027-02-03T00:00:00Z'));
    expect(openEnd(start, ms('2027-01-15T00:00:00Z'), '1M', now)).toBe(ms('2027-01-15T00:00:00Z'));
    expect(openEnd(start, ms('2027-01-01T00:00:00Z'), '1M', now)).toBe(start);
    expect(openEnd(start, ms('2028-02-10T00:00:00Z'), '1M', now)).toBe(ms('2027-02-10T00:00:00Z'));
    expect(openEnd(start, ms('2028-02-24T00:00:00Z'), '1M', now)).toBe(ms('2027-02-24T00:00:00Z'));
    expect(openEnd(start, ms('2027-03-10T00:00:00Z'), '1M', now)).toBe(ms('2027-02-10T00:00:00Z'));
    expect(openEnd(start, now + 30 * DAY, '30D', now + 1000)).toBe(now);
  });
});

describe('over HTTP and the close job', () => {
  let t: TestApp;
  let client: Awaited<ReturnType<TestApp['createClient']>>;

  beforeAll(async () => {
    t = await createTestApp();
    client = await t.createClient();
  });
  afterAll(async () => {
    vi.useRealTimers();
    await t.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function at(iso: string): void {
    vi.useFakeTimers({ toFake: ['Date'], now: ms(iso) });
    vi.setSystemTime(ms(iso));
  }

  /** A new metered plan: 2 included, 1.00 per extra call; its usage period is the default for plans priced by use. */
  async function plan(title = 'Metered'): Promise<number> {
    const id = (await t.admin('product/prepare', { title, type: 'apikey' })).result as number;
    const updated = await t.admin('product/update', { id, status: 'enabled', pricing: MONTHLY, config: { included: 2, overage: { mode: 'per_unit', unit_price: '1' } } });
    expect(updated.body.error).toBeNull();
    return id;
  }
  async function buy(productId: number): Promise<{ orderId: number; key: string }> {
    const orderId = (await t.admin('order/create', { client_id: client.id, product_id: productId, activate: true, period: '1M' })).result as number;
    return { orderId, key: (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string };
  }
  const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;
  async function use(key: string, times: number): Promise<void> {
    for (let i = 0; i < times; i++) expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
  }
  const closes = (orderId: number) => t.services.db.selectFrom('usage_closes').selectAll().where('order_id', '=', orderId).orderBy('period_start').execute();
  const flush = () => t.services.apikeys.flushUsage();
  const closeAt = async (iso: string) => {
    at(iso);
    return t.services.usageCloser.closePeriods(new Date());
  };

  it('plans priced by use count by billing period unless they say otherwise; monthlyLimit-only plans by calendar month', async () => {
    at('2027-01-10T00:00:00Z');
    const fresh = (await t.admin('product/prepare', { title: 'Fresh', type: 'apikey' })).result as number;
    expect((await t.admin('product/get', { id: fresh })).result.config.usage_period).toBeUndefined();
    // Priced by use (included, overage or a hard limit): the billing period.
    for (const config of [{ included: 5 }, { hard_limit: 9 }, { included: 1, overage: { mode: 'per_unit', unit_price: '1' } }]) {
      expect((await t.admin('product/update_config', { id: fresh, config })).result).toBe(true);
      expect((await t.admin('product/get', { id: fresh })).result.config.usage_period).toBe('billing_period');
    }
    // Said otherwise: kept.
    expect((await t.admin('product/update_config', { id: fresh, config: { included: 5, usage_period: 'calendar_month' } })).result).toBe(true);
    expect((await t.admin('product/get', { id: fresh })).result.config.usage_period).toBe('calendar_month');
    // FOSSBilling's monthlyLimit alone: the calendar month of CONTRACT §7.1.
    const fossbilling = await makeProduct(t, { title: 'Monthly', type: 'apikey', config: { enforce_limit: true, custom: { monthlyLimit: 3 } } });
    expect((await t.admin('product/get', { id: fossbilling })).result.config.usage_period).toBeUndefined();
    const { key } = await buy(fossbilling);
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-01-01', period_end: '2027-01-31' });
  });

  it('migration 021 gives plans priced by use saved before it their calendar month, and leaves the others', async () => {
    const PG = process.env.TEST_DATABASE_URL ?? '';
    const postgres = PG === '' ? null : await freshPostgresDatabase(PG);
    const handle = openDatabase(postgres?.url ?? 'sqlite::memory:');
    try {
      // Migrations take Kysely<any>; so does this test, which writes the table as it was before 021.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const db = handle.db as unknown as Kysely<any>;
      const migrator = new Migrator({ db, provider: { getMigrations: (): Promise<Record<string, Migration>> => Promise.resolve(migrations) } });
      expect((await migrator.migrateTo('016_search_speed')).error).toBeUndefined();
      const stamp = '2026-11-22T10:00:00Z';
      const configs: Array<[string, string, Record<string, unknown>]> = [
        ['metered', 'apikey', { included: 100, overage: { mode: 'per_unit', unit_price: '1' }, custom: {} }],
        ['limited', 'apikey', { hard_limit: 50, custom: {} }],
        ['monthly', 'apikey', { custom: { monthlyLimit: 10 } }],
        ['aligned', 'apikey', { included: 100, usage_period: 'billing_period', custom: {} }],
        ['custom', 'custom', { included: 5 }],
      ];
      for (const [slug, type, config] of configs) {
        await sql`INSERT INTO products (title, slug, type, status, setup, pricing, config, created_at, updated_at) VALUES (${slug}, ${slug}, ${type}, 'enabled', 'after_payment', '{}', ${JSON.stringify(config)}, ${stamp}, ${stamp})`.execute(db);
      }
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      const rows = await sql<{ slug: string; config: string }>`SELECT slug, config FROM products ORDER BY id`.execute(db);
      expect(rows.rows.map((row) => [row.slug, (JSON.parse(row.config) as Record<string, unknown>).usage_period])).toEqual([
        ['metered', 'calendar_month'],
        ['limited', 'calendar_month'],
        ['monthly', undefined],
        ['aligned', 'billing_period'],
        ['custom', undefined],
      ]);
    } finally {
      await handle.close();
      await postgres?.drop();
    }
  });

  it('staff extending an order by two weeks extend its open usage period: closed and billed at the new end, once', async () => {
    at('2027-01-10T00:00:00Z');
    const { orderId, key } = await buy(await plan());
    await use(key, 4);
    await flush();
    at('2027-01-20T00:00:00Z');
    expect((await t.admin('order/update', { id: orderId, expires_at: '2027-02-24T00:00:00Z' })).result).toBe(true);
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-01-10T00:00:00Z', period_end: '2027-02-24T00:00:00Z', used: 5, overage_units: 3 });
    await flush();
    // At the old end nothing closes; at the new one the whole period is billed once.
    await closeAt('2027-02-10T00:01:00Z');
    expect(await closes(orderId)).toHaveLength(0);
    at('2027-02-23T23:59:59Z');
    await use(key, 1);
    await flush();
    await closeAt('2027-02-24T00:01:00Z');
    await closeAt('2027-02-24T00:02:00Z');
    const [closed, ...more] = await closes(orderId);
    expect(more).toHaveLength(0);
    expect(closed).toMatchObject({ period_start: '2027-01-10T00:00:00Z', period_end: '2027-02-24T00:00:00Z' });
    expect(Number(closed!.used)).toBe(6);
    expect(Number(closed!.amount)).toBe(400);
  });

  it('staff moving the expiry earlier end the usage period with the order; whole periods change nothing', async () => {
    at('2027-03-10T00:00:00Z');
    const { orderId, key } = await buy(await plan());
    await use(key, 3);
    await flush();
    at('2027-03-15T00:00:00Z');
    // A whole month later: the open period stays as it was.
    expect((await t.admin('order/update', { id: orderId, expires_at: '2027-05-10T00:00:00Z' })).result).toBe(true);
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-03-10T00:00:00Z', period_end: '2027-04-10T00:00:00Z' });
    await flush();
    expect((await t.admin('order/update', { id: orderId, expires_at: '2027-03-20T00:00:00Z' })).result).toBe(true);
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-03-10T00:00:00Z', period_end: '2027-03-20T00:00:00Z', used: 5 });
    await flush();
    await closeAt('2027-03-20T00:01:00Z');
    const [closed] = await closes(orderId);
    expect(closed).toMatchObject({ period_start: '2027-03-10T00:00:00Z', period_end: '2027-03-20T00:00:00Z' });
    expect(Number(closed!.amount)).toBe(300);
  });

  it('a plan change that starts a new period now closes the open one now', async () => {
    at('2027-06-01T00:00:00Z');
    const { orderId, key } = await buy(await plan());
    const bigger = await plan('Bigger');
    await use(key, 5);
    await flush();
    at('2027-06-11T12:00:00Z');
    await inTransaction(t.services.db, (trx) => t.services.orders.applyPlanChange(trx, orderId, { productId: bigger, period: '1M', price: 2000 }, new Date()));
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-06-11T12:00:00Z', period_end: '2027-07-11T12:00:00Z', used: 1 });
    await flush();
    await closeAt('2027-06-11T12:01:00Z');
    const [closed] = await closes(orderId);
    expect(closed).toMatchObject({ period_start: '2027-06-01T00:00:00Z', period_end: '2027-06-11T12:00:00Z' });
    expect(Number(closed!.used)).toBe(5);
    expect(Number(closed!.amount)).toBe(300);
  });

  it('refuses bad moves with the right codes and changes nothing', async () => {
    at('2027-08-01T00:00:00Z');
    const { orderId, key } = await buy(await plan());
    await use(key, 1);
    await flush();
    expectError(await t.admin('order/update', { id: orderId, expires_at: 'soon' }), 422);
    expectError(await t.admin('order/update', { id: 'x', expires_at: '2027-09-15' }), 422);
    expectError(await t.admin('order/update', { id: 999_999, expires_at: '2027-09-15' }), 404);
    // Staff who may only look at orders may not move them; clients have no such action at all.
    expectError(await asStaff(t, await staffWith(t, ['order.view']), 'order/update', { id: orderId, expires_at: '2027-09-15' }), 403);
    expect((await asClient(t, client.token, 'order/update', { id: orderId, expires_at: '2027-09-15' })).body.error).not.toBeNull();
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-08-01T00:00:00Z', period_end: '2027-09-01T00:00:00Z' });
  });
});
