// Reports in the default currency at the stored rates (issue 26 item 7): on a seeded book in USD and EUR — euros
// invoiced at two stored rates, and invoices without a stored rate (issued before currencies were sold) — every
// money figure of the dashboard has its total in the default currency equal to a direct computation; the top
// customers are ranked by that value; FOSSBilling's one-number Stats count every currency; the lists and their CSV
// carry each row's amount in the default; and after the default changes, the same figures are restated in the new one.
// SQLite, and PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatMoney } from '../../../src/lib/money.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { makeProduct } from '../../helpers/selling-fixtures.ts';
import { activeRecurring, mrrOf, renewalsOf, revenueOf, runningAt, scheduledOf } from './expected.ts';
import { atToday, failedInDefault, revenueInDefault, toDefault, topCustomersInDefault, USD_WORLD, type World } from './expected-default.ts';
import { seedBook, type Seeded } from './seed.ts';

const DAY = 86_400_000;
const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const money = (minor: number | undefined): string => formatMoney(minor ?? 0, 2);
const EVER = { start: '0000-01-01T00:00:00Z', end: '9999-12-31T23:59:59Z' };

describe('the dashboard in the default currency at the stored rates', () => {
  let t: TestApp;
  let seeded: Seeded;
  let now: number;
  beforeAll(async () => {
    t = await createTestApp();
    expect((await t.admin('currency/create', { code: 'EUR', conversion_rate: USD_WORLD.today.EUR })).result).toBe('EUR');
    const clients: number[] = [];
    for (let index = 0; index < 8; index += 1) clients.push((await t.createClient()).id);
    const products = [await makeProduct(t, { title: 'Basic' }), await makeProduct(t, { title: 'Pro' })];
    now = Date.now();
    seeded = await seedBook(t.services.db, clients, products, now, 26);
  });
  afterAll(async () => {
    await t.close();
  });

  const bounds = (fromMs: number, toMs: number) => ({ start: `${day(fromMs)}T00:00:00Z`, end: `${day(toMs + DAY)}T00:00:00Z` });
  const todayMs = () => Date.parse(`${day(Date.now())}T00:00:00Z`);

  /** Every money total of a dashboard answer against the direct computation in `world`. */
  function expectTotals(answer: Record<string, any>, world: World, current: { start: string; end: string }, previous: { start: string; end: string }, months: string[]): void {
    const totals = answer.in_default_currency;
    expect(answer.default_currency).toBe(world.code);
    expect(totals.currency).toBe(world.code);
    expect(answer.conversion).toContain(`Totals in ${world.code}`);
    expect(answer.conversion).toContain('rate stored on each invoice');
    const during = revenueInDefault(seeded, world, current.start, current.end).get('');
    const before = revenueInDefault(seeded, world, previous.start, previous.end).get('');
    expect(totals.net_revenue).toEqual({ paid: money(during?.paid), refunds: money(during?.refunds), credit_notes: money(during?.credit_notes), net: money(during?.net), previous_net: money(before?.net) });
    expect(totals.usage_revenue).toEqual({ amount: money(during?.usage), previous: money(before?.usage) });
    expect(totals.top_ups).toEqual({ amount: money(during?.top_ups), previous: money(before?.top_ups) });
    const byMonth = revenueInDefault(seeded, world, `${months[0]}-01T00:00:00Z`, current.end, true);
    expect(totals.revenue_by_month).toEqual(
      months.map((month) => {
        const row = byMonth.get(month);
        return { month, paid: money(row?.paid), refunds: money(row?.refunds), credit_notes: money(row?.credit_notes), net: money(row?.net) };
      }),
    );
    const failed = failedInDefault(seeded, world, current.start, current.end);
    expect(totals.failed_payments).toEqual({ failed: money(failed.failed), recovered: money(failed.recovered) });
    const top = topCustomersInDefault(seeded, world, current.start, current.end);
    expect(answer.top_customers.map((row: Record<string, unknown>) => [row.client_id, row.currency, row.amount, row.default_amount])).toEqual(
      top.map((row) => [row.client_id, row.currency, money(row.amount), money(row.inDefault)]),
    );
  }

  const monthsTo = (ms: number): string[] => {
    const end = new Date(ms);
    return Array.from({ length: 12 }, (_, index) => new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - 11 + index, 1)).toISOString().slice(0, 7));
  };

  it('answers every money figure as a total in USD: invoiced amounts at their stored rates, and says so', async () => {
    const answer = (await t.admin('stats/dashboard')).result;
    expectTotals(answer, USD_WORLD, bounds(todayMs() - 29 * DAY, todayMs()), bounds(todayMs() - 59 * DAY, todayMs() - 30 * DAY), monthsTo(todayMs()));
    // Not vacuous: euros at both stored rates and without one were paid in the twelve months, and both currencies are in the per-currency rows.
    const paidEuros = seeded.invoices.filter((invoice) => invoice.currency === 'EUR' && invoice.paid_at !== null && invoice.paid_at >= `${monthsTo(todayMs())[0]}-01`);
    expect(new Set(paidEuros.map((invoice) => invoice.currency_rate))).toEqual(new Set(['0.9204', '0.95', null]));
    expect(answer.net_revenue.map((row: { currency: string }) => row.currency)).toEqual(['EUR', 'USD']);
  });

  it('does the same for a range asked for, where top customers of both currencies are ranked by their value in USD', async () => {
    const from = todayMs() - 200 * DAY;
    const to = todayMs() - 3 * DAY;
    const answer = (await t.admin('stats/dashboard', { from: day(from), to: day(to) })).result;
    const length = to - from + DAY;
    expectTotals(answer, USD_WORLD, bounds(from, to), bounds(from - length, from - DAY), monthsTo(to));
    expect(new Set(answer.top_customers.map((row: { currency: string }) => row.currency))).toEqual(new Set(['EUR', 'USD']));
  });

  it('converts MRR, ARR, renewals, scheduled cancellations at today’s rate', async () => {
    const answer = (await t.admin('stats/dashboard')).result;
    const sumAtToday = (figures: Map<string, { mrr: number; arr: number; amount: number }>, field: 'mrr' | 'arr' | 'amount') =>
      [...figures].reduce((sum, [currency, value]) => sum + atToday(value[field], currency, USD_WORLD), 0);
    const current = mrrOf(seeded, activeRecurring(seeded));
    const previous = mrrOf(seeded, runningAt(seeded, `${answer.from}T00:00:00Z`));
    expect(new Set(current.keys())).toEqual(new Set(['EUR', 'USD']));
    const totals = answer.in_default_currency;
    expect(totals.mrr).toEqual({ amount: money(sumAtToday(current, 'mrr')), previous: money(sumAtToday(previous, 'mrr')) });
    expect(totals.arr).toEqual({ amount: money(sumAtToday(current, 'arr')), previous: money(sumAtToday(previous, 'arr')) });
    expect(totals.cancellations_scheduled).toEqual({ mrr: money(sumAtToday(mrrOf(seeded, scheduledOf(seeded)), 'mrr')) });
    const renewals = renewalsOf(seeded, new Date(now).toISOString(), new Date(now + 30 * DAY).toISOString());
    expect(totals.renewals_due).toEqual({ amount: money([...renewals.amounts].reduce((sum, [currency, amount]) => sum + atToday(amount, currency, USD_WORLD), 0)) });
  });

  it('FOSSBilling’s get_income_vs_refunds and get_summary_income count every currency, in USD at the stored rates', async () => {
    const ever = revenueInDefault(seeded, USD_WORLD, EVER.start, EVER.end).get('')!;
    expect((await t.admin('stats/get_income_vs_refunds')).result).toEqual({ income: money(ever.paid), refund: money(ever.refunds + ever.credit_notes) });
    expect((await t.admin('stats/get_summary_income')).result.total).toBe(money(ever.net));
    // The euros are in it: the total is more than the dollars alone.
    const dollars = revenueOf(seeded, EVER.start, EVER.end).get('|USD')!;
    expect(ever.paid).toBeGreaterThan(dollars.paid + 100_000);
  });

  it('each list row and its CSV carry the row’s amount in USD at its invoice’s rate, and they add up to the total', async () => {
    const range = { from: day(todayMs() - 200 * DAY), to: day(todayMs()) };
    const list = async (figure: string) => (await t.admin('stats/dashboard_list', { figure, per_page: 500, ...range })).result;
    const revenue = await list('revenue');
    expect(revenue.columns).toEqual(expect.arrayContaining(['default_currency', 'total_in_default']));
    for (const row of revenue.list) {
      const invoice = seeded.invoices.find((i) => i.id === row.invoice_id)!;
      expect(row.default_currency).toBe('USD');
      expect(row.total_in_default, `invoice ${invoice.id}`).toBe(money(toDefault(invoice.total, invoice, USD_WORLD)));
    }
    for (const [figure, column] of [['refunds', 'amount_in_default'], ['credit_notes', 'total_in_default'], ['usage', 'amount_in_default'], ['top_ups', 'amount_in_default'], ['failed_payments', 'total_in_default'], ['mrr', 'mrr_in_default'], ['top_customers', 'amount_in_default']] as const) {
      const rows = await list(figure);
      expect(rows.columns, figure).toContain(column);
      expect(rows.list.length, figure).toBeGreaterThan(0);
      for (const row of rows.list) expect(row[column], `${figure} ${JSON.stringify(row)}`).toMatch(/^-?\d+\.\d{2}$/);
    }
    // A euro refund's amount in USD is at its invoice's stored rate, not today's.
    const refunds = await list('refunds');
    const euroRefund = refunds.list.find((row: { currency: string }) => row.currency === 'EUR');
    expect(euroRefund).toBeDefined();
    const invoice = seeded.invoices.find((i) => i.id === euroRefund.invoice_id)!;
    const amount = Math.round(Number(euroRefund.amount) * 100);
    expect(euroRefund.amount_in_default).toBe(money(toDefault(amount, { currency: 'EUR', currency_rate: invoice.currency_rate, currency_base: invoice.currency_base }, USD_WORLD)));
    const authorization = `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}`;
    const csv = await t.app.inject({ method: 'GET', url: `/api/admin/export/dashboard_revenue.csv?from=${range.from}&to=${range.to}`, headers: { authorization } });
    expect(csv.statusCode).toBe(200);
    const lines = csv.body.trim().split('\r\n');
    expect(lines[0]).toBe('"invoice_id","number","client_id","currency","total","paid_at","from_balance","default_currency","total_in_default"');
    expect(lines).toHaveLength(revenue.total + 1);
  });

  it('after the default becomes EUR, the totals are restated in EUR: dollars carried at today’s USD rate, euros at their stored rates', async () => {
    expect((await t.admin('currency/set_default', { code: 'EUR' })).result).toBe(true);
    const usd = (await t.admin('currency/get', { code: 'USD' })).result;
    const world: World = { code: 'EUR', today: { USD: usd.conversion_rate } };
    const answer = (await t.admin('stats/dashboard')).result;
    expectTotals(answer, world, bounds(todayMs() - 29 * DAY, todayMs()), bounds(todayMs() - 59 * DAY, todayMs() - 30 * DAY), monthsTo(todayMs()));
    const ever = revenueInDefault(seeded, world, EVER.start, EVER.end).get('')!;
    expect((await t.admin('stats/get_income_vs_refunds')).result).toEqual({ income: money(ever.paid), refund: money(ever.refunds + ever.credit_notes) });
  });
});
