// Issue 20, "Done when": over random sequences of checkout (with or without a coupon), change_plan, renewal_invoice,
// payment (by staff or reported by a provider), refund, cancellation at period end (and uncancel), suspension and
// expiry (the scheduler, on a simulated clock), the paid amount always covers the service delivered: an order is
// never moved onto a plan, nor given time on it, except by a payment of that plan's price for that period, less the
// documented credits — a coupon's discount, and the unused part of the current period as it was actually paid (net
// of refunds) when the plan change was priced. A full refund does not end the service (documented: the order runs
// until it expires), so what is checked is each grant of service at the moment it is made.
// Seeded (PROPERTY_SEED=n reproduces a run, PROPERTY_RUNS=n changes how many); runs on SQLite, and on PostgreSQL +
// Redis when TEST_* are set.
import type { Selectable } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/schema.ts';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { ApiError } from '../../../src/platform/errors.ts';
import { addPeriod } from '../../../src/lib/periods.ts';
import { periodStart } from '../../../src/lib/proration.ts';
import { isoSeconds, timeOf } from '../../../src/lib/time.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { makeProduct } from '../../helpers/selling-fixtures.ts';

type Order = Selectable<Database['orders']>;
type Invoice = Selectable<Database['invoices']>;
type Line = Selectable<Database['invoice_items']>;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SEED = Number(process.env.PROPERTY_SEED ?? 20261126);
const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);
const STEPS = 14;

/** mulberry32: a small seeded PRNG. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

const ACTIONS = ['change_plan', 'renewal_invoice', 'pay_staff', 'pay_provider', 'refund', 'cancel', 'uncancel', 'suspend', 'unsuspend', 'time'] as const;
type Action = (typeof ACTIONS)[number];
// Weighted: paying, renewing and changing plan more often than the rest, so that most sequences grant service
// several times (an activation, renewals, plan changes) between the refunds, cancellations and expiries.
const WEIGHTED: readonly Action[] = [...ACTIONS, 'change_plan', 'renewal_invoice', 'pay_staff', 'pay_provider', 'time'];

/** The model's side of one order: what was paid for its current period, and by which invoice. */
interface Model {
  paidCurrent: number;
  currentInvoice: number | null;
  /** Recurring coupon percent the order renews with (0 without). */
  recurringPercent: number;
  /** Credit each plan-change invoice was issued with, and the bound it was checked against. */
  credits: Map<number, number>;
}

describe('the paid amount always covers the service delivered (issue 20)', () => {
  let t: TestApp;
  const plans: Array<{ id: number; period: string; price: number }> = [];
  const coupons: Array<{ code: string; percent: number; recurring: boolean } | null> = [null, null, null];

  beforeAll(async () => {
    t = await createTestApp();
    for (const [title, period, price] of [
      ['A', '1M', '10.00'],
      ['B', '1M', '20.00'],
      ['C', '1M', '35.00'],
      ['W', '1W', '5.00'],
      ['Y', '1Y', '90.00'],
    ] as const) {
      const id = await makeProduct(t, { title, setup: 'after_payment', pricing: { type: 'recurrent', recurrent: { [period]: { price, setup: '0', enabled: true } } } });
      plans.push({ id, period, price: Math.round(Number(price) * 100) });
    }
    for (const [code, percent, recurring] of [
      ['FREE', 100, false],
      ['HALF', 50, false],
      ['EVER', 30, true],
    ] as const) {
      expect((await t.admin('product/promo_create', { code, type: 'percentage', value: String(percent), recurring })).body.error).toBeNull();
      coupons.push({ code, percent, recurring });
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it(`holds over ${RUNS} random sequences (seed ${SEED})`, { timeout: 240_000 }, async () => {
    const next = random(SEED);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
    const { db } = t.services;
    const gateway = t.services.gateways.byCode('custom')!;
    const stats: Record<string, number> = {};
    let clock = Date.now();

    const orderRow = (id: number): Promise<Order> => db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const invoiceRow = (id: number): Promise<Invoice> => db.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const invoicesOf = (orderId: number, status: string) =>
      db
        .selectFrom('invoices')
        .innerJoin('invoice_items', 'invoice_items.invoice_id', 'invoices.id')
        .select('invoices.id')
        .distinct()
        .where('invoice_items.order_id', '=', orderId)
        .where('invoices.status', '=', status as Invoice['status'])
        .orderBy('invoices.id')
        .execute();
    /** Runs one action; a refusal the contract allows (409, 422) is an outcome, anything else fails the test. */
    async function attempt(work: () => Promise<unknown>): Promise<unknown> {
      try {
        return await work();
      } catch (error) {
        if (error instanceof ApiError && (error.status === 409 || error.status === 422)) return error;
        throw error;
      }
    }

    for (let run = 0; run < RUNS; run++) {
      const trail: string[] = [];
      const fail = (message: string): never => {
        throw new Error(`seed ${SEED}, run ${run}: ${message}\n  steps: ${trail.join(' → ')}`);
      };
      const clientId = await t.services.clients.create({ email: `prop-${SEED}-${run}@example.com`, first_name: 'Prop' });
      // Checkout, with a coupon one time in two.
      const plan = pick(plans);
      const coupon = pick(coupons);
      await t.services.carts.addItem({ clientId }, { id: plan.id, period: plan.period }, new Date(clock));
      if (coupon !== null) await t.services.carts.applyPromo({ clientId }, coupon.code, new Date(clock));
      const checkout = await t.services.carts.checkout(clientId, {}, new Date(clock));
      const orderId = checkout.order_id;
      trail.push(`checkout ${plan.period} ${plan.price}${coupon === null ? '' : ` ${coupon.code}`}`);
      const model: Model = { paidCurrent: 0, currentInvoice: null, recurringPercent: coupon?.recurring === true ? coupon.percent : 0, credits: new Map() };
      if (checkout.invoice_id === null) {
        // Nothing was owed (a 100% coupon): the order is active on a period that cost nothing.
        const order = await orderRow(orderId);
        if (order.status !== 'active' || coupon?.percent !== 100) fail(`checkout without an invoice left the order ${order.status}`);
      }

      for (let step = 0; step < STEPS; step++) {
        const action: Action = pick(WEIGHTED);
        stats[action] = (stats[action] ?? 0) + 1;
        clock += Math.floor(next() * 6 * HOUR) + 1000;
        const now = new Date(clock);
        const before = await orderRow(orderId);
        let paidInvoice: Invoice | null = null;
        let zeroChargeUpgrade: { credit: number; total: number } | null = null;
        let outcome: unknown = null;
        switch (action) {
          case 'change_plan': {
            const target = pick(plans);
            outcome = await attempt(() => t.services.selfService.changePlan(orderId, clientId, { product_id: target.id, period: target.period }, now));
            if (!(outcome instanceof ApiError)) {
              const result = outcome as { change: string; effective: string; invoice_id: number | null; credit: string; amount: string };
              const credit = Math.round(Number(result.credit) * 100);
              // M1, M8: the credit is at most what was paid for the part of the period left.
              if (result.change === 'upgrade') {
                const expires = timeOf(before.expires_at!);
                const start = periodStart(new Date(expires), before.period!).getTime();
                const bound = Math.floor((model.paidCurrent * Math.min(1, (expires - clock) / (expires - start))) + 1);
                if (credit > bound) fail(`change_plan credited ${credit} but only ${model.paidCurrent} was paid for the period (bound ${bound})`);
                if (result.invoice_id !== null) model.credits.set(result.invoice_id, credit);
                else zeroChargeUpgrade = { credit, total: target.price * before.quantity };
              }
            }
            trail.push(`change_plan→${target.period} ${target.price}: ${outcome instanceof ApiError ? outcome.status : (outcome as { effective: string }).effective}`);
            break;
          }
          case 'renewal_invoice': {
            outcome = await attempt(() => t.services.invoices.renewalInvoice(orderId, clientId, now));
            // L6: never for an order canceled at period end; H1: never beside an unpaid plan change.
            if (!(outcome instanceof ApiError)) {
              if (before.cancel_at_period_end === 1) fail('a renewal invoice was issued for an order canceled at period end');
              const lines = await db.selectFrom('invoice_items').selectAll().where('invoice_id', '=', outcome as number).execute();
              if (lines.some((line) => line.task !== 'renew')) fail('a renewal invoice holds another task');
            }
            trail.push(`renewal_invoice: ${outcome instanceof ApiError ? outcome.status : 'ok'}`);
            break;
          }
          case 'pay_staff':
          case 'pay_provider': {
            const unpaid = await invoicesOf(orderId, 'unpaid');
            if (unpaid.length === 0) {
              trail.push(`${action}: nothing unpaid`);
              break;
            }
            const invoice = await invoiceRow(pick(unpaid).id);
            if (action === 'pay_staff') outcome = await attempt(() => t.services.invoices.markAsPaid(invoice.id, {}, now));
            else {
              outcome = await inTransaction(db, (trx) =>
                t.services.gatewayPayments.applyPayment(trx, gateway, { invoiceId: invoice.id, ref: `p-${run}-${step}`, amount: invoice.total, currency: invoice.currency }, now),
              );
            }
            if ((await invoiceRow(invoice.id)).status === 'paid') paidInvoice = invoice;
            trail.push(`${action} #${invoice.id} (${invoice.total}): ${outcome instanceof ApiError ? outcome.status : typeof outcome === 'string' ? outcome : 'paid'}`);
            break;
          }
          case 'refund': {
            const paid = await invoicesOf(orderId, 'paid');
            if (paid.length === 0) {
              trail.push('refund: nothing paid');
              break;
            }
            const invoice = await invoiceRow(pick(paid).id);
            // PostgreSQL sums bigints as numeric, which arrives as text.
            const sum = await db.selectFrom('transactions').select((eb) => eb.fn.sum<string | number>('amount').as('n')).where('invoice_id', '=', invoice.id).where('type', '=', 'refund').executeTakeFirst();
            const refunded = Number(sum?.n ?? 0);
            const left = invoice.total - refunded;
            const amount = next() < 0.5 ? left : Math.max(1, Math.floor(left * next()));
            outcome = await attempt(() => t.services.gatewayPayments.refund(invoice.id, amount, now));
            if (!(outcome instanceof ApiError) && invoice.id === model.currentInvoice) model.paidCurrent = Math.max(0, model.paidCurrent - amount);
            trail.push(`refund #${invoice.id} ${amount}: ${outcome instanceof ApiError ? outcome.status : 'ok'}`);
            break;
          }
          case 'cancel':
          case 'uncancel':
            outcome = await attempt(() => t.services.selfService[action](orderId, clientId, now));
            trail.push(`${action}: ${outcome instanceof ApiError ? outcome.status : 'ok'}`);
            break;
          case 'suspend':
          case 'unsuspend':
            outcome = await attempt(() => t.services.orders.change(orderId, action, { now }));
            trail.push(`${action}: ${outcome instanceof ApiError ? outcome.status : 'ok'}`);
            break;
          case 'time': {
            clock += Math.floor(next() * 40 * DAY);
            const report = await t.services.cron.run(new Date(clock));
            if (report.failed !== 0) fail(`the scheduler failed on ${report.failed} orders`);
            // M2: no plan change stays payable past the period it was priced for.
            const lapsed = await db
              .selectFrom('invoice_items')
              .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
              .select('invoices.id')
              .where('invoice_items.order_id', '=', orderId)
              .where('invoice_items.task', '=', 'change')
              .where('invoices.status', '=', 'unpaid')
              .where('invoice_items.priced_until', '<=', isoSeconds(new Date(clock)))
              .execute();
            if (lapsed.length > 0) fail(`plan change #${lapsed[0]!.id} is still payable after its priced period`);
            trail.push(`time → ${isoSeconds(new Date(clock))}`);
            break;
          }
        }

        // H1: at most one unpaid invoice buys the order time.
        const buying = await db
          .selectFrom('invoice_items')
          .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
          .select('invoices.id')
          .where('invoice_items.order_id', '=', orderId)
          .where('invoice_items.task', 'in', ['renew', 'change'])
          .where('invoices.status', '=', 'unpaid')
          .execute();
        if (buying.length > 1) fail(`${buying.length} unpaid invoices buy the order time at once`);

        // Each grant of service (a later expiry, or another plan) must be paid for.
        const after = await orderRow(orderId);
        const extended = (after.expires_at === null ? 0 : timeOf(after.expires_at)) > (before.expires_at === null ? 0 : timeOf(before.expires_at));
        const replanned = after.product_id !== before.product_id || after.price !== before.price || after.period !== before.period;
        if (!extended && !replanned) continue;
        stats.grants = (stats.grants ?? 0) + 1;
        const kind = zeroChargeUpgrade !== null ? 'grant_by_credit' : `grant_by_${(await db.selectFrom('invoice_items').select('task').where('invoice_id', '=', paidInvoice?.id ?? 0).executeTakeFirst())?.task ?? 'nothing'}`;
        stats[kind] = (stats[kind] ?? 0) + 1;
        if (zeroChargeUpgrade !== null) {
          // An upgrade the credit pays for in full: the credit (checked above) covers the new plan's period.
          if (zeroChargeUpgrade.credit < zeroChargeUpgrade.total) fail(`an upgrade applied at once with credit ${zeroChargeUpgrade.credit} < ${zeroChargeUpgrade.total}`);
          if (after.price * after.quantity !== zeroChargeUpgrade.total) fail('the zero-charge upgrade moved the order to another price');
          model.paidCurrent = zeroChargeUpgrade.total;
          model.currentInvoice = null;
          continue;
        }
        if (paidInvoice === null) fail(`service granted by "${action}" without a payment: ${JSON.stringify({ before: pickPlan(before), after: pickPlan(after) })}`);
        const invoice = paidInvoice!;
        const [line] = (await db.selectFrom('invoice_items').selectAll().where('invoice_id', '=', invoice.id).where('order_id', '=', orderId).execute()) as Line[];
        if (line === undefined) fail(`invoice #${invoice.id} granted service to an order it does not bill`);
        const granted = line!;
        // A line that names no plan (an activation) is for the order's own.
        if (after.product_id !== (granted.product_id ?? before.product_id) || after.period !== granted.period || after.price !== granted.price) {
          fail(`invoice #${invoice.id} (${granted.task} ${granted.period} ${granted.price}) put the order on ${after.period} ${after.price}`);
        }
        const full = granted.price * granted.quantity;
        if (granted.task === 'renew') {
          if (before.cancel_at_period_end === 1) fail('an order canceled at period end was renewed');
          const discountAllowed = Math.floor((full * model.recurringPercent) / 100) + 1;
          if (invoice.total < full - discountAllowed) fail(`renewal paid ${invoice.total} for a period of ${full}`);
          const expected = isoSeconds(addPeriod(new Date(Math.max(timeOf(before.expires_at!), clock)), granted.period!));
          if (after.expires_at !== expected) fail(`renewal moved the expiry to ${after.expires_at}, not one period (${expected})`);
          model.paidCurrent = invoice.total;
          model.currentInvoice = invoice.id;
        } else if (granted.task === 'change') {
          if (before.status !== 'active' || before.cancel_at_period_end === 1) fail(`a plan change applied to an order ${before.status}`);
          if (clock >= timeOf(before.expires_at!)) fail('a plan change applied after the period it was priced for');
          const credit = model.credits.get(invoice.id);
          if (credit === undefined || full - invoice.total > credit) fail(`plan change paid ${invoice.total} of ${full} with credit ${credit}`);
          if (after.expires_at !== isoSeconds(addPeriod(new Date(clock), granted.period!))) fail('a plan change granted more than one period from now');
          model.paidCurrent = invoice.total + (credit ?? 0);
          model.currentInvoice = invoice.id;
        } else if (granted.task === 'activate') {
          if (before.status !== 'pending_setup') fail('an activation line activated a running order');
          const discountAllowed = Math.ceil((full * (coupon?.percent ?? 0)) / 100);
          if (invoice.total < full - discountAllowed) fail(`activation paid ${invoice.total} for ${full}`);
          model.paidCurrent = invoice.total;
          model.currentInvoice = invoice.id;
        }
      }
      // Leave nothing running for the next sequences' scheduler runs.
      await attempt(() => t.services.orders.change(orderId, 'cancel', { now: new Date(clock) }));
      clock += DAY;
    }
    if (process.env.PROPERTY_STATS) console.log(stats);
    // Every action ran often, and service was granted often: the property was exercised, not vacuously true.
    for (const action of ACTIONS) expect(stats[action] ?? 0, action).toBeGreaterThan(RUNS / 2);
    for (const kind of ['grant_by_activate', 'grant_by_renew', 'grant_by_change', 'grant_by_credit']) expect(stats[kind] ?? 0, kind).toBeGreaterThan(RUNS / 20);
  });
});

function pickPlan(order: Order) {
  return { product_id: order.product_id, period: order.period, price: order.price, expires_at: order.expires_at, status: order.status };
}
