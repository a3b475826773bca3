// The dashboard's projected overage (issue 25 item 1) is what the close of each open usage period would bill if it
// closed now: the built-in calls and every meter of the plan (a sum meter and a max meter here), an order in a second
// currency priced to the micro-unit and converted at its rate (1.0865), an order with meter usage and no calls; prepaid
// plans and meters within their included units contribute nothing; suspended and cancelled orders count, as the close
// bills their period too. The figure, its list
// and its CSV equal a direct computation from the usage sent, and equal what the close then bills. Events go in
// through the usage service with an explicit `now`; the clock is faked (Date only) where HTTP actions read it. Runs on
// SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { formatMoney } from '../../../src/lib/money.ts';
import { overageByOrder, projectedOverage } from '../../../src/modules/stats/projected-overage.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { at } from '../../helpers/clock.ts';
import { MONTHLY } from '../../helpers/selling-fixtures.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  vi.useRealTimers();
  await t.close();
});
afterEach(() => {
  vi.useRealTimers();
});

// Prices chosen so that rounding once per meter in euros differs from converting the dollar amount or pricing in euros.
const CALLS = { included: 10, overage: { mode: 'per_unit', unit_price: '0.013' } };
const TOKENS = { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1_000_000, overage: { mode: 'per_unit', unit_price: '0.000003' } };
const STORAGE = { code: 'storage', name: 'Storage', unit: 'GB', aggregation: 'max', included: 10, overage: { mode: 'per_unit', unit_price: '0.25' } };
const EUR_RATE = '1.0865';

/** The direct computation: each meter's overage in micro-units of the default currency (USD), from the usage sent. */
const micros = {
  calls: (used: number) => BigInt(Math.max(0, used - CALLS.included)) * 13_000n,
  tokens: (used: number) => BigInt(Math.max(0, used - TOKENS.included)) * 3n,
  storage: (used: number) => BigInt(Math.max(0, used - STORAGE.included)) * 250_000n,
};
const halfUp = (numerator: bigint, denominator: bigint): number => Number((2n * numerator + denominator) / (2n * denominator));
/** Micro-dollars in cents, rounded half up once. */
const usd = (amount: bigint): number => halfUp(amount, 10_000n);
/** Micro-dollars in euro cents at 1.0865, rounded half up once. */
const eur = (amount: bigint): number => halfUp(amount * 10_865n, 100_000_000n);

interface Usage {
  calls: number;
  tokens: number[];
  /** Storage measured on successive days: the period's figure is the greatest. */
  storage: number[];
}

/** What the close bills one order, per meter, in the order's currency's minor units. */
function expected(usage: Usage, convert: (amount: bigint) => number) {
  const tokens = usage.tokens.reduce((sum, value) => sum + value, 0);
  const storage = Math.max(0, ...usage.storage);
  const calls = convert(micros.calls(usage.calls));
  const meters = { tokens: convert(micros.tokens(tokens)), storage: convert(micros.storage(storage)) };
  return { calls, meters, used: { tokens, storage }, amount: calls + meters.tokens + meters.storage };
}

let ids = 0;

/** Sends the usage for the order at `now`, storage on successive days before it; every event must be accepted. */
async function send(orderId: number, now: Date, usage: Usage): Promise<void> {
  const event = (meter: string, extra: Record<string, unknown> = {}) => ({ id: `po-${++ids}`, order_id: orderId, meter, timestamp: now.toISOString(), ...extra });
  const events = [
    ...Array.from({ length: usage.calls }, () => event('calls')),
    ...usage.tokens.map((value) => event('tokens', { value })),
    ...usage.storage.map((value, index) => event('storage', { value, timestamp: new Date(now.getTime() - (usage.storage.length - index) * 86_400_000).toISOString() })),
  ];
  const answer = await t.services.usage.ingest(events, now);
  expect(answer.rejected).toEqual([]);
  expect(answer.accepted).toBe(events.length);
}

async function plan(title: string, config: Record<string, unknown>): Promise<number> {
  const id = (await t.admin('product/prepare', { title, type: 'apikey' })).result as number;
  const updated = await t.admin('product/update', { id, status: 'enabled', pricing: MONTHLY, config: { usage_period: 'calendar_month', ...config } });
  expect(updated.body).toEqual({ result: true, error: null });
  return id;
}

async function buy(productId: number, currency: string | null = null): Promise<{ orderId: number; clientId: number }> {
  const client = await t.createClient();
  if (currency !== null) expect((await t.admin('client/update', { id: client.id, currency })).result).toBe(true);
  const created = await t.admin('order/create', { client_id: client.id, product_id: productId, activate: true, period: '1M' });
  expect(created.body.error).toBeNull();
  return { orderId: created.result as number, clientId: client.id };
}

const csv = async (): Promise<string[]> => {
  const reply = await t.app.inject({ method: 'GET', url: '/api/admin/export/dashboard_projected_overage.csv', headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
  expect(reply.statusCode).toBe(200);
  return reply.body.trim().split('\r\n');
};

describe('the projected overage is what the close would bill now', () => {
  const OVER: Usage = { calls: 17, tokens: [1_500_000, 734_567], storage: [12, 15, 7] };

  it('prices calls and every meter, converts an order in another currency, leaves out prepaid and within-included orders, counts suspended and cancelled ones — and the close then bills exactly that', async () => {
    let now = at('2031-05-20T12:00:00Z');
    expect((await t.admin('currency/create', { code: 'EUR', conversion_rate: EUR_RATE })).result).toBe('EUR');
    const metered = await plan('AI API', { ...CALLS, meters: [TOKENS, STORAGE] });
    const prepaid = await plan('AI API prepaid', { ...CALLS, meters: [TOKENS], prepaid: true });
    // Calls included without limit, only the tokens priced: the order is read for its meter's overage rule alone.
    const tokensOnly = await plan('Tokens API', { meters: [TOKENS] });

    const dollars = await buy(metered);
    const euros = await buy(metered, 'EUR');
    const within = await buy(metered);
    const metersOnly = await buy(metered);
    const meterPriced = await buy(tokensOnly);
    const tinyOver = await buy(tokensOnly);
    const drawn = await buy(prepaid);
    const suspended = await buy(metered);
    const cancelled = await buy(metered);
    expect((await t.admin('client/balance_add_funds', { id: drawn.clientId, amount: '50.00', description: 'Top-up' })).result).toBe(true);

    await send(dollars.orderId, now, OVER);
    await send(euros.orderId, now, OVER);
    await send(within.orderId, now, { calls: 10, tokens: [400_000, 600_000], storage: [9, 10] });
    await send(metersOnly.orderId, now, { calls: 0, tokens: [2_234_567], storage: [] });
    await send(drawn.orderId, now, { calls: 30, tokens: [3_000_000], storage: [] });
    await send(meterPriced.orderId, now, { calls: 40, tokens: [1_500_000], storage: [] });
    await send(tinyOver.orderId, now, { calls: 40, tokens: [1_000_001], storage: [] });
    await send(suspended.orderId, now, OVER);
    await send(cancelled.orderId, now, OVER);
    expect((await t.admin('order/suspend', { id: suspended.orderId })).body.error).toBeNull();
    expect((await t.admin('order/cancel', { id: cancelled.orderId })).body.error).toBeNull();

    // The direct computation.
    const inDollars = expected(OVER, usd);
    const inEuros = expected(OVER, eur);
    const onlyMeters = expected({ calls: 0, tokens: [2_234_567], storage: [] }, usd);
    const tokensPriced = expected({ calls: 0, tokens: [1_500_000], storage: [] }, usd);
    // One token over at 0.000003 is 0.000003 $, rounded once to 0: the close bills nothing.
    expect(expected({ calls: 0, tokens: [1_000_001], storage: [] }, usd).amount).toBe(0);
    const dollarTotal = 3 * inDollars.amount + onlyMeters.amount + tokensPriced.amount;
    // Not vacuous: the dollar prices read as euros (no conversion) would project 5.04 €, not 5.48 €.
    expect(inEuros.amount).not.toBe(inDollars.amount);
    expect([inDollars.calls, inDollars.meters.tokens, inDollars.meters.storage]).toEqual([9, 370, 125]);
    expect([inEuros.calls, inEuros.meters.tokens, inEuros.meters.storage]).toEqual([10, 402, 136]);

    // The figure.
    const figure = async () => (await t.admin('stats/dashboard')).result.projected_overage;
    expect(await figure()).toEqual({
      orders: 6,
      amounts: [
        { currency: 'EUR', amount: formatMoney(inEuros.amount, 2) },
        { currency: 'USD', amount: formatMoney(dollarTotal, 2) },
      ],
    });
    // In the default currency before conversion, for a default-currency total.
    expect(await projectedOverage(t.services.db, t.services.selling, now.toISOString())).toEqual([
      { currency: 'EUR', orders: 1, amount: inEuros.amount, default_amount: inDollars.amount },
      { currency: 'USD', orders: 5, amount: dollarTotal, default_amount: dollarTotal },
    ]);
    const byOrder = await overageByOrder(t.services.db, t.services.selling, now.toISOString());
    expect(byOrder.map((row) => [row.order_id, row.period_start, row.period_end, row.amount, row.default_amount])).toEqual([
      [dollars.orderId, '2031-05-01T00:00:00Z', '2031-06-01T00:00:00Z', inDollars.amount, inDollars.amount],
      [euros.orderId, '2031-05-01T00:00:00Z', '2031-06-01T00:00:00Z', inEuros.amount, inDollars.amount],
      [metersOnly.orderId, '2031-05-01T00:00:00Z', '2031-06-01T00:00:00Z', onlyMeters.amount, onlyMeters.amount],
      [meterPriced.orderId, '2031-05-01T00:00:00Z', '2031-06-01T00:00:00Z', tokensPriced.amount, tokensPriced.amount],
      [suspended.orderId, '2031-05-01T00:00:00Z', '2031-06-01T00:00:00Z', inDollars.amount, inDollars.amount],
      [cancelled.orderId, '2031-05-01T00:00:00Z', '2031-06-01T00:00:00Z', inDollars.amount, inDollars.amount],
    ]);

    // The list, and its CSV.
    const metersText = (figures: ReturnType<typeof expected>) =>
      `Tokens: ${figures.used.tokens.toLocaleString('en-US')} tokens used, 1,000,000 included, ${(figures.used.tokens - 1_000_000).toLocaleString('en-US')} over = ${formatMoney(figures.meters.tokens, 2)}` +
      (figures.meters.storage > 0 ? `; Storage: ${figures.used.storage} GB used, 10 included, ${figures.used.storage - 10} over = ${formatMoney(figures.meters.storage, 2)}` : '');
    // The plan's price in the default currency beside each (the euro order's is the dollar price before conversion).
    const inDefault = (amount: number) => ({ default_currency: 'USD', amount_in_default: formatMoney(amount, 2) });
    const overDollars = (order: { orderId: number; clientId: number }) => ({
      order_id: order.orderId, client_id: order.clientId, currency: 'USD', used: 17, included: 10, overage_units: 7, amount: formatMoney(inDollars.amount, 2), meters: metersText(inDollars), ...inDefault(inDollars.amount),
    });
    const rows = [
      overDollars(dollars),
      { order_id: euros.orderId, client_id: euros.clientId, currency: 'EUR', used: 17, included: 10, overage_units: 7, amount: formatMoney(inEuros.amount, 2), meters: metersText(inEuros), ...inDefault(inDollars.amount) },
      { order_id: metersOnly.orderId, client_id: metersOnly.clientId, currency: 'USD', used: 0, included: 10, overage_units: 0, amount: formatMoney(onlyMeters.amount, 2), meters: metersText(onlyMeters), ...inDefault(onlyMeters.amount) },
      // Unlimited calls: included is empty.
      { order_id: meterPriced.orderId, client_id: meterPriced.clientId, currency: 'USD', used: 40, included: null, overage_units: 0, amount: formatMoney(tokensPriced.amount, 2), meters: metersText(tokensPriced), ...inDefault(tokensPriced.amount) },
      overDollars(suspended),
      overDollars(cancelled),
    ];
    expect(rows[0]!.meters).toBe('Tokens: 2,234,567 tokens used, 1,000,000 included, 1,234,567 over = 3.70; Storage: 15 GB used, 10 included, 5 over = 1.25');
    const list = await t.admin('stats/dashboard_list', { figure: 'projected_overage' });
    expect(list.body.error).toBeNull();
    expect(list.result).toMatchObject({ columns: ['order_id', 'client_id', 'currency', 'used', 'included', 'overage_units', 'amount', 'meters', 'default_currency', 'amount_in_default'], total: 6, list: rows });
    const quoted = (row: Record<string, string | number | null>) => Object.values(row).map((cell) => `"${cell ?? ''}"`).join(',');
    expect(await csv()).toEqual(['"order_id","client_id","currency","used","included","overage_units","amount","meters","default_currency","amount_in_default"', ...rows.map(quoted)]);
    // One page at a time, in order.
    expect((await t.admin('stats/dashboard_list', { figure: 'projected_overage', per_page: 4, page: 2 })).result).toMatchObject({ total: 6, list: rows.slice(4) });
    // The default-currency total: the plans' own prices (the euro order's before conversion).
    expect((await t.admin('stats/dashboard')).result.in_default_currency.projected_overage).toEqual({ amount: formatMoney(dollarTotal + inDollars.amount, 2) });

    // Each currency is described once per projection, not once per order (five orders are in dollars).
    const { selling } = t.services;
    const describeCurrency = vi.fn(selling.describe);
    await overageByOrder(t.services.db, { describe: describeCurrency, storedRateConverter: (q) => selling.storedRateConverter(q) }, now.toISOString());
    expect(describeCurrency.mock.calls.map((call) => String(call[1])).toSorted((a, b) => a.localeCompare(b))).toEqual(['EUR', 'USD']);

    // The last minute of the period: the projection made just before the close …
    now = at('2031-05-31T23:59:00Z');
    const projected = await overageByOrder(t.services.db, t.services.selling, now.toISOString());
    expect(projected.map((row) => row.amount)).toEqual([inDollars.amount, inEuros.amount, onlyMeters.amount, tokensPriced.amount, inDollars.amount, inDollars.amount]);
    // … is what the close bills: one usage invoice per order, its total the projected amount; nothing for the others.
    now = at('2031-06-01T00:01:00Z');
    expect(await t.services.usageCloser.closePeriods(now)).toMatchObject({ failed: 0 });
    const billed = async (orderId: number) => {
      const close = await t.services.db.selectFrom('usage_closes').select('invoice_id').where('order_id', '=', orderId).where('period_start', '=', '2031-05-01T00:00:00Z').executeTakeFirst();
      if (close?.invoice_id === null || close?.invoice_id === undefined) return null;
      const invoice = await t.services.db.selectFrom('invoices').select(['currency', 'total']).where('id', '=', close.invoice_id).executeTakeFirstOrThrow();
      return [invoice.currency, invoice.total];
    };
    for (const row of projected) expect(await billed(row.order_id), `order ${row.order_id}`).toEqual([row.currency, row.amount]);
    expect(await billed(within.orderId)).toBeNull();
    expect(await billed(drawn.orderId)).toBeNull();
    expect(await billed(tinyOver.orderId)).toBeNull();
    // A new period has opened with nothing in it yet.
    expect(await figure()).toEqual({ orders: 0, amounts: [] });
  });
});
