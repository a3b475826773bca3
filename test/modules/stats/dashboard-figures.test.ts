// The dashboard's figures (issue 25 items 1–4) against a direct computation on a seeded book of business: MRR and ARR
// with recurring coupons, every period kind, trials, suspensions, cancellations and scheduled cancellations; net
// revenue with partial refunds, credit notes and invoices paid from the balance; usage and top-up lines; new and
// churned customers; failed and recovered payments; renewals due; top customers; the 12 months. Then the same flows
// through the real actions (pay, partial refund, credit note, pay from the balance) move the figures by exactly their
// amounts. SQLite, and PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatMoney } from '../../../src/lib/money.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';
import { activeRecurring, churnedOf, failedOf, linesOf, mrrOf, renewalsOf, revenueOf, runningAt, scheduledOf } from './expected.ts';
import { topCustomersInDefault } from './expected-default.ts';
import { seedBook, type Seeded } from './seed.ts';

const DAY = 86_400_000;
const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const money = (minor: number | undefined): string => formatMoney(minor ?? 0, 2);

describe('dashboard figures against a direct computation', () => {
  let t: TestApp;
  let seeded: Seeded;
  let clients: number[];
  let now: number;
  beforeAll(async () => {
    t = await createTestApp();
    clients = [];
    for (let index = 0; index < 8; index += 1) clients.push((await t.createClient()).id);
    const products = [await makeProduct(t, { title: 'Basic' }), await makeProduct(t, { title: 'Pro' })];
    now = Date.now();
    seeded = await seedBook(t.services.db, clients, products, now);
  });
  afterAll(async () => {
    await t.close();
  });

  const today = () => day(Date.now());
  const bounds = (fromMs: number, toMs: number) => ({ start: `${day(fromMs)}T00:00:00Z`, end: `${day(toMs + DAY)}T00:00:00Z` });

  it('answers the default range: the last 30 days against the 30 before', async () => {
    const reply = await t.admin('stats/dashboard');
    expect(reply.body.error).toBeNull();
    const todayMs = Date.parse(`${today()}T00:00:00Z`);
    expect(reply.result).toMatchObject({ from: day(todayMs - 29 * DAY), to: today(), previous_from: day(todayMs - 59 * DAY), previous_to: day(todayMs - 30 * DAY) });
  });

  it('MRR and ARR: active orders out of trial, coupons taken off per order, every period restated per month; at the range start by dates', async () => {
    const answer = (await t.admin('stats/dashboard')).result;
    const current = mrrOf(seeded, activeRecurring(seeded));
    const previous = mrrOf(seeded, runningAt(seeded, `${answer.from}T00:00:00Z`));
    const currencies = [...new Set([...current.keys(), ...previous.keys()])].toSorted();
    expect(answer.mrr).toEqual(currencies.map((currency) => ({ currency, amount: money(current.get(currency)?.mrr), previous: money(previous.get(currency)?.mrr), orders: current.get(currency)?.orders ?? 0 })));
    expect(answer.arr).toEqual(currencies.map((currency) => ({ currency, amount: money(current.get(currency)?.arr), previous: money(previous.get(currency)?.arr) })));
    // The seed has every kind the rule covers, so this comparison is not vacuous.
    const counted = activeRecurring(seeded);
    expect(new Set(counted.map((order) => order.period.slice(-1)))).toEqual(new Set(['D', 'W', 'M', 'Y']));
    expect(counted.some((order) => order.promo_id !== null)).toBe(true);
    expect(seeded.orders.some((order) => order.status === 'active' && order.trial_state === 'running')).toBe(true);
  });

  it('net revenue (paid − refunds − credit notes) for both ranges, and by month for 12 months', async () => {
    const answer = (await t.admin('stats/dashboard')).result;
    const todayMs = Date.parse(`${today()}T00:00:00Z`);
    const current = bounds(todayMs - 29 * DAY, todayMs);
    const previous = bounds(todayMs - 59 * DAY, todayMs - 30 * DAY);
    const inRange = revenueOf(seeded, current.start, current.end);
    const before = revenueOf(seeded, previous.start, previous.end);
    const currencies = [...new Set([...inRange.keys(), ...before.keys()].map((key) => key.split('|')[1]!))].toSorted();
    expect(answer.net_revenue).toEqual(
      currencies.map((currency) => {
        const row = inRange.get(`|${currency}`);
        return { currency, paid: money(row?.paid), refunds: money(row?.refunds), credit_notes: money(row?.credit_notes), net: money(row?.net), previous_net: money(before.get(`|${currency}`)?.net) };
      }),
    );
    expect(currencies.length).toBeGreaterThan(0);

    const thisMonth = new Date(todayMs);
    const months = Array.from({ length: 12 }, (_, index) => new Date(Date.UTC(thisMonth.getUTCFullYear(), thisMonth.getUTCMonth() - 11 + index, 1)).toISOString().slice(0, 7));
    const byMonth = revenueOf(seeded, `${months[0]}-01T00:00:00Z`, current.end, true);
    const monthCurrencies = [...new Set([...byMonth.keys()].map((key) => key.split('|')[1]!))].toSorted();
    expect(answer.revenue_by_month).toEqual(
      months.flatMap((month) =>
        monthCurrencies.map((currency) => {
          const row = byMonth.get(`${month}|${currency}`);
          return { month, currency, paid: money(row?.paid), refunds: money(row?.refunds), credit_notes: money(row?.credit_notes), net: money(row?.net) };
        }),
      ),
    );
    // Partial refunds, balance credit notes and balance payments are all in the seed.
    expect(seeded.transactions.some((tx) => tx.type === 'refund' && seeded.invoices.find((i) => i.id === tx.invoice_id)!.total > tx.amount)).toBe(true);
    expect(seeded.notes.some((note) => note.method === 'balance')).toBe(true);
    expect(seeded.transactions.some((tx) => tx.gateway === 'credits')).toBe(true);
  });

  it('usage and top-up revenue, new and churned customers, failed and recovered payments, top customers — for a range asked for', async () => {
    const todayMs = Date.parse(`${today()}T00:00:00Z`);
    const from = day(todayMs - 89 * DAY);
    const to = day(todayMs - 5 * DAY);
    const answer = (await t.admin('stats/dashboard', { from, to })).result;
    expect(answer).toMatchObject({ from, to, previous_to: day(todayMs - 90 * DAY), previous_from: day(todayMs - 174 * DAY) });
    const current = bounds(todayMs - 89 * DAY, todayMs - 5 * DAY);
    const previous = bounds(todayMs - 174 * DAY, todayMs - 90 * DAY);
    for (const [field, task] of [['usage_revenue', 'usage'], ['top_ups', 'deposit']] as const) {
      const inRange = linesOf(seeded, current.start, current.end, task);
      const before = linesOf(seeded, previous.start, previous.end, task);
      const currencies = [...new Set([...inRange.keys(), ...before.keys()])].toSorted();
      expect(answer[field], field).toEqual(currencies.map((currency) => ({ currency, amount: money(inRange.get(currency)), previous: money(before.get(currency)) })));
    }
    expect(answer.new_customers).toEqual({ count: 0, previous: 0 });
    expect(answer.churned_customers).toEqual({ count: churnedOf(seeded, current.start, current.end), previous: churnedOf(seeded, previous.start, previous.end) });
    expect(answer.churned_customers.count).toBeGreaterThan(0);
    const failed = failedOf(seeded, current.start, current.end);
    const failedBefore = failedOf(seeded, previous.start, previous.end);
    expect(answer.failed_payments).toMatchObject({ count: failed.count, recovered: failed.recovered, previous_count: failedBefore.count, previous_recovered: failedBefore.recovered });
    expect(failed.recovered).toBeGreaterThan(0);
    expect(failed.count).toBeGreaterThan(failed.recovered);
    // Ranked by value in the default currency (default-currency.test.ts checks the conversion; this instance has no EUR
    // rate, so euros issued in euros stand as they are).
    expect(answer.top_customers.map((row: { client_id: number; currency: string; amount: string }) => [row.client_id, row.currency, row.amount])).toEqual(
      topCustomersInDefault(seeded, { code: 'USD', today: {} }, current.start, current.end).map((row) => [row.client_id, row.currency, money(row.amount)]),
    );
    // The MRR of a range ending in the past is the orders running at its end, by their dates.
    const atEnd = mrrOf(seeded, runningAt(seeded, current.end));
    expect(answer.mrr.map((row: { currency: string; amount: string }) => [row.currency, row.amount])).toEqual([...atEnd].toSorted(([a], [b]) => a.localeCompare(b)).map(([currency, figures]) => [currency, money(figures.mrr)]));
  });

  it('counts the clients who signed up in the range', async () => {
    expect((await t.admin('stats/dashboard')).result.new_customers).toEqual({ count: clients.length, previous: 0 });
  });

  it('cancellations scheduled and renewals due in the next 30 days, with their amounts', async () => {
    const answer = (await t.admin('stats/dashboard')).result;
    const scheduled = mrrOf(seeded, scheduledOf(seeded));
    expect(answer.cancellations_scheduled).toEqual({
      count: scheduledOf(seeded).length,
      amounts: [...scheduled].toSorted(([a], [b]) => a.localeCompare(b)).map(([currency, figures]) => ({ currency, amount: money(figures.amount), mrr: money(figures.mrr) })),
    });
    expect(answer.cancellations_scheduled.count).toBeGreaterThan(0);
    const renewals = renewalsOf(seeded, new Date(now).toISOString(), new Date(now + 30 * DAY).toISOString());
    expect(answer.renewals_due.count).toBe(renewals.count);
    expect(answer.renewals_due.amounts.map((row: { currency: string; amount: string }) => [row.currency, row.amount])).toEqual(
      [...renewals.amounts].toSorted(([a], [b]) => a.localeCompare(b)).map(([currency, amount]) => [currency, money(amount)]),
    );
    expect(renewals.count).toBeGreaterThan(0);
  });

  it('each figure’s list adds up to the figure', async () => {
    const answer = (await t.admin('stats/dashboard')).result;
    const sum = (rows: Array<Record<string, unknown>>, field: string, currency: string) =>
      rows.filter((row) => row.currency === currency).reduce((total, row) => total + Math.round(Number(row[field]) * 100), 0);
    const all = async (figure: string, params: Record<string, unknown> = {}) => {
      const reply = await t.admin('stats/dashboard_list', { figure, per_page: 500, ...params });
      expect(reply.body.error).toBeNull();
      expect(reply.result.list.length).toBe(reply.result.total);
      return reply.result.list as Array<Record<string, unknown>>;
    };
    const mrrRows = await all('mrr');
    expect(mrrRows.length).toBe(activeRecurring(seeded).length);
    for (const row of answer.mrr) expect(money(sum(mrrRows, 'amount', row.currency))).toBe(money(mrrOf(seeded, activeRecurring(seeded)).get(row.currency)?.amount));
    const revenueRows = await all('revenue');
    const refundRows = await all('refunds');
    const noteRows = await all('credit_notes');
    for (const row of answer.net_revenue) {
      const paid = revenueRows.filter((r) => r.currency === row.currency && r.from_balance === 0);
      expect(money(sum(paid, 'total', row.currency))).toBe(row.paid);
      expect(money(sum(refundRows, 'amount', row.currency))).toBe(row.refunds);
      expect(money(sum(noteRows, 'total', row.currency))).toBe(row.credit_notes);
    }
    expect((await all('failed_payments')).length).toBe(answer.failed_payments.count);
    expect((await all('renewals_due')).length).toBe(answer.renewals_due.count);
    expect((await all('cancellations_scheduled')).length).toBe(answer.cancellations_scheduled.count);
    expect((await all('new_customers')).map((row) => row.client_id)).toEqual(clients);
    expect((await all('top_customers')).map((row) => row.client_id)).toEqual(answer.top_customers.map((row: { client_id: number }) => row.client_id));
    const old = { from: day(now - 89 * DAY), to: day(now - 5 * DAY) };
    expect((await all('churned_customers', old)).length).toBe((await t.admin('stats/dashboard', old)).result.churned_customers.count);
  });

  it('usage and top-up lines added, changed and removed on a paid invoice, and the invoice unpaid, move the figures by exactly their amounts (the rollup of migration 052); they equal the lines joined to their invoices', async () => {
    const { db } = t.services;
    const since = `${day(Date.now() - 29 * DAY)}T00:00:00Z`;
    const invoice = seeded.invoices.find((row) => row.paid_at !== null && row.paid_at >= since && (row.status === 'paid' || row.status === 'refunded'))!;
    expect(invoice).toBeDefined();
    const amount = (rows: Array<Record<string, string>>): number => Number(rows.find((row) => row.currency === invoice.currency)?.amount ?? 0);
    const figures = async () => (await t.admin('stats/dashboard')).result;
    const before = await figures();
    const line = { invoice_id: invoice.id, order_id: null, title: 'line', period: null, quantity: 1, executed: 1, product_id: null, priced_until: null, covers_until: null };
    const usage = await db.insertInto('invoice_items').values({ ...line, task: 'usage', price: 1234, total: 1234 }).returning('id').executeTakeFirstOrThrow();
    await db.insertInto('invoice_items').values({ ...line, task: 'deposit', price: 500, total: 500 }).execute();
    const added = await figures();
    expect(amount(added.usage_revenue) - amount(before.usage_revenue)).toBeCloseTo(12.34, 6);
    expect(amount(added.top_ups) - amount(before.top_ups)).toBeCloseTo(5, 6);
    await db.updateTable('invoice_items').set({ task: 'deposit', total: 2000 }).where('id', '=', usage.id).execute();
    const changed = await figures();
    expect(amount(changed.usage_revenue)).toBeCloseTo(amount(before.usage_revenue), 6);
    expect(amount(changed.top_ups) - amount(before.top_ups)).toBeCloseTo(25, 6);
    await db.deleteFrom('invoice_items').where('id', '=', usage.id).execute();
    expect(amount((await figures()).top_ups) - amount(before.top_ups)).toBeCloseTo(5, 6);
    const lines = await db.selectFrom('invoice_items').select(['task', 'total']).where('invoice_id', '=', invoice.id).where('task', 'in', ['usage', 'deposit']).execute();
    const ofTask = (task: string): number => lines.filter((row) => row.task === task).reduce((sum, row) => sum + row.total, 0) / 100;
    await db.updateTable('invoices').set({ status: 'unpaid', paid_at: null }).where('id', '=', invoice.id).execute();
    const unpaid = await figures();
    expect(amount(before.usage_revenue) - amount(unpaid.usage_revenue)).toBeCloseTo(ofTask('usage'), 6);
    expect(amount(added.top_ups) - amount(unpaid.top_ups)).toBeCloseTo(ofTask('deposit'), 6);
    // Two years of figures against the lines joined to their paid invoices.
    const from = day(Date.now() - 729 * DAY);
    const answer = (await t.admin('stats/dashboard', { from, to: today() })).result;
    const joined = await db
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select(['invoices.currency as currency', 'invoice_items.task as task', 'invoice_items.total as total'])
      .where('invoices.paid_at', '>=', `${from}T00:00:00Z`)
      .where('invoices.status', 'in', ['paid', 'refunded'])
      .where('invoice_items.task', 'in', ['usage', 'deposit'])
      .execute();
    for (const [field, task] of [['usage_revenue', 'usage'], ['top_ups', 'deposit']] as const) {
      const sums = new Map<string, number>();
      for (const row of joined) if (row.task === task) sums.set(row.currency, (sums.get(row.currency) ?? 0) + row.total);
      expect(answer[field].map((row: { currency: string; amount: string }) => [row.currency, row.amount])).toEqual([...sums.entries()].toSorted((a, b) => a[0].localeCompare(b[0])).map(([currency, sum]) => [currency, money(sum)]));
    }
  });
});

describe('dashboard figures move with the real flows, exactly once', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const figures = async () => (await t.admin('stats/dashboard')).result;
  const usd = (rows: Array<Record<string, string>>) => rows.find((row) => row.currency === 'USD');

  it('a paid monthly order adds its price to MRR and revenue; a partial refund and a credit note come off net revenue once each', async () => {
    const plan = await makeProduct(t, { title: 'Pro', pricing: { type: 'recurrent', recurrent: { '1M': { price: '30.00', setup: '0', enabled: true }, '1Y': { price: '240.00', setup: '0', enabled: true } } } });
    const buyer = await t.createClient();
    expect((await figures()).mrr).toEqual([]);
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1Y' })).body.error).toBeNull();
    const checkout = await asClient(t, buyer.token, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    expect((await t.admin('invoice/mark_as_paid', { id: checkout.result.invoice_id })).result).toBe(true);
    let now = await figures();
    expect(usd(now.mrr)).toMatchObject({ amount: '20.00', orders: 1 });
    expect(usd(now.arr)).toMatchObject({ amount: '240.00' });
    expect(usd(now.net_revenue)).toMatchObject({ paid: '240.00', refunds: '0.00', credit_notes: '0.00', net: '240.00' });
    expect(now.top_customers).toEqual([{ client_id: buyer.id, email: buyer.email, name: expect.any(String), currency: 'USD', amount: '240.00', default_amount: '240.00' }]);

    expect((await t.admin('invoice/refund', { id: checkout.result.invoice_id, amount: '40.00' })).body.error).toBeNull();
    now = await figures();
    expect(usd(now.net_revenue)).toMatchObject({ paid: '240.00', refunds: '40.00', credit_notes: '0.00', net: '200.00' });
    expect((await t.admin('invoice/credit_note_create', { invoice_id: checkout.result.invoice_id, amount: '15.00', reason: 'Outage' })).body.error).toBeNull();
    now = await figures();
    expect(usd(now.net_revenue)).toMatchObject({ paid: '240.00', refunds: '40.00', credit_notes: '15.00', net: '185.00' });
    // The credit went to the balance; paying the next invoice from it is not revenue again.
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const second = await asClient(t, buyer.token, 'cart/checkout');
    expect((await asClient(t, buyer.token, 'client/balance_get_total')).result).toBe('15.00');
    const topUp = await asClient(t, buyer.token, 'invoice/funds_invoice', { amount: '20.00' });
    expect(topUp.body.error).toBeNull();
    const topUpId = (await t.services.db.selectFrom('invoices').select('id').where('hash', '=', topUp.result as string).executeTakeFirstOrThrow()).id;
    expect((await t.admin('invoice/mark_as_paid', { id: topUpId })).result).toBe(true);
    now = await figures();
    expect(usd(now.top_ups)).toMatchObject({ amount: '20.00' });
    expect(usd(now.net_revenue)).toMatchObject({ paid: '260.00', net: '205.00' });
    expect((await asClient(t, buyer.token, 'invoice/pay_with_credits', { id: second.result.invoice_id })).body.error).toBeNull();
    now = await figures();
    expect(usd(now.net_revenue)).toMatchObject({ paid: '260.00', net: '205.00' });
    expect(usd(now.mrr)).toMatchObject({ amount: '50.00', orders: 2 });
  });

  it('a failed payment then paid counts as failed and recovered; cancelling at period end is scheduled, cancelling now leaves MRR', async () => {
    const plan = await makeProduct(t, { title: 'Weekly', pricing: { type: 'recurrent', recurrent: { '1W': { price: '12.00', setup: '0', enabled: true } } } });
    const buyer = await t.createClient();
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1W' })).body.error).toBeNull();
    const checkout = await asClient(t, buyer.token, 'cart/checkout');
    const invoiceId = checkout.result.invoice_id as number;
    const before = await figures();
    await t.services.db
      .insertInto('transactions')
      .values({ invoice_id: invoiceId, client_id: buyer.id, gateway_id: null, gateway: 'stripe', transaction_id: 'pi_declined', amount: 1200, currency: 'USD', type: 'payment', status: 'failed', message: 'Your card was declined.', created_at: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') })
      .execute();
    expect((await figures()).failed_payments).toMatchObject({ count: before.failed_payments.count + 1, recovered: before.failed_payments.recovered });
    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId })).result).toBe(true);
    const paid = await figures();
    expect(paid.failed_payments).toMatchObject({ count: before.failed_payments.count + 1, recovered: before.failed_payments.recovered + 1 });
    // 12.00 a week is 52.00 a month.
    expect(Number(usd(paid.mrr)!.amount) - Number(usd(before.mrr)!.amount)).toBeCloseTo(52, 6);
    expect((await asClient(t, buyer.token, 'order/cancel', { id: checkout.result.order_id })).body.error).toBeNull();
    const scheduled = await figures();
    expect(scheduled.cancellations_scheduled).toEqual({ count: 1, amounts: [{ currency: 'USD', amount: '12.00', mrr: '52.00' }] });
    expect((await t.admin('order/cancel', { id: checkout.result.order_id })).body.error).toBeNull();
    const canceled = await figures();
    expect(canceled.cancellations_scheduled.count).toBe(0);
    expect(usd(canceled.mrr)!.amount).toBe(usd(before.mrr)!.amount);
  });
});
