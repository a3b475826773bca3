// Staff end or extend a free trial (issue 24): admin/order/trial_extend {id, days} moves the running trial's end and
// expiry (the reminder goes out again before a new end), admin/order/trial_end {id} ends it now as the scheduler
// would — the first invoice charged to a saved card, or the order suspended with TRIAL_ENDED — once, also when
// asked five times at once. Refusals: not on trial, days ≤ 0 or > 365 or not whole, missing or wrong-typed
// parameters, an unknown order, a staff member without order.manage, a client. Runs on SQLite, and on PostgreSQL +
// Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, expectError, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';
import { payByCard, purchase, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const DAY = 86_400_000;

describe('staff end or extend a free trial', () => {
  let stand: StripeStand;
  let plan: number;
  let paidPlan: number;
  beforeAll(async () => {
    stand = await stripeStand();
    plan = await makeProduct(stand.t, { title: 'Trial plan', type: 'apikey', config: { trial: { days: 7, requires_card: false } } });
    paidPlan = await makeProduct(stand.t, { title: 'Starter', type: 'custom' });
  });
  afterAll(async () => {
    await stand.close();
  });

  const t = () => stand.t;
  const order = async (id: number) => (await t().admin('order/get', { id })).result;
  const invoicesOf = (clientId: number) => t().services.db.selectFrom('invoices').selectAll().where('client_id', '=', clientId).orderBy('id').execute();

  async function onTrial(client?: { id: number; token: string }) {
    const buyer = client ?? (await t().createClient());
    expect((await asClient(t(), buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const reply = await asClient(t(), buyer.token, 'cart/checkout');
    expect(reply.body.error).toBeNull();
    return { buyer, orderId: reply.result.order_id as number };
  }

  it('extends a running trial by N days: the end, the expiry and a new reminder', async () => {
    const { buyer, orderId } = await onTrial();
    const before = await order(orderId);
    // Two days before the end the reminder goes out…
    await t().services.cron.run(new Date(Date.parse(before.trial_ends_at) - 2 * DAY));
    expect((await t().services.db.selectFrom('orders').select('trial_reminded').where('id', '=', orderId).executeTakeFirstOrThrow()).trial_reminded).toBe(1);
    const reply = await t().admin('order/trial_extend', { id: orderId, days: 10 });
    expect(reply.body.error).toBeNull();
    const after = await order(orderId);
    expect(reply.result).toBe(after.trial_ends_at);
    expect(Date.parse(after.trial_ends_at) - Date.parse(before.trial_ends_at)).toBe(10 * DAY);
    expect(after).toMatchObject({ on_trial: true, status: 'active', expires_at: after.trial_ends_at, card_on_file: false });
    // …and, the new end being further away, goes out again before it.
    expect((await t().services.db.selectFrom('orders').select('trial_reminded').where('id', '=', orderId).executeTakeFirstOrThrow()).trial_reminded).toBe(0);
    expect((await asClient(t(), buyer.token, 'order/get', { id: orderId })).result.trial_ends_at).toBe(after.trial_ends_at);
    // The old end passes: nothing happens.
    await t().services.cron.run(new Date(Date.parse(before.trial_ends_at) + 60_000));
    expect(await order(orderId)).toMatchObject({ on_trial: true, status: 'active' });
    expect(await invoicesOf(buyer.id)).toEqual([]);
  });

  it('refuses bad days, unknown orders, orders not on trial, staff without order.manage and clients', async () => {
    const { buyer, orderId } = await onTrial();
    for (const days of [0, -1, 366, 2.5, 'three', null]) expectInvalid(await t().admin('order/trial_extend', { id: orderId, days }), 'days');
    expectInvalid(await t().admin('order/trial_extend', { id: orderId }), 'days');
    expectInvalid(await t().admin('order/trial_extend', { days: 3 }), 'id');
    expectInvalid(await t().admin('order/trial_end', {}), 'id');
    expectInvalid(await t().admin('order/trial_end', { id: 'x' }), 'id');
    expectError(await t().admin('order/trial_extend', { id: 99_999_999, days: 3 }), 404);
    expectError(await t().admin('order/trial_end', { id: 99_999_999 }), 404);
    const viewer = await staffWith(t(), ['order.view']);
    expectError(await asStaff(t(), viewer, 'order/trial_extend', { id: orderId, days: 3 }), 403);
    expectError(await asStaff(t(), viewer, 'order/trial_end', { id: orderId }), 403);
    expectError(await t().call('/api/admin/order/trial_end', { id: orderId }, { basic: ['client', buyer.token] }), 203, 401);
    const bought = await purchase(t(), paidPlan);
    expect((await t().admin('invoice/mark_as_paid', { id: bought.invoiceId })).body.error).toBeNull();
    for (const [action, params] of [['order/trial_extend', { id: bought.orderId, days: 3 }], ['order/trial_end', { id: bought.orderId }]] as const) {
      const refused = await t().admin(action, params);
      expectError(refused, 409);
      expect(refused.body.error?.message).toBe('The order is not on a free trial');
    }
    expect((await order(orderId)).on_trial).toBe(true);
  });

  it('ends a trial now without a card: the first invoice is issued and the order suspended (TRIAL_ENDED), once', async () => {
    const { buyer, orderId } = await onTrial();
    const replies = await Promise.all(Array.from({ length: 5 }, () => t().admin('order/trial_end', { id: orderId })));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(replies.filter((reply) => reply.status !== 200).every((reply) => reply.status === 409)).toBe(true);
    expect(await order(orderId)).toMatchObject({ status: 'suspended', on_trial: false, reason: 'Free trial ended' });
    expect((await invoicesOf(buyer.id)).map((invoice) => invoice.status)).toEqual(['unpaid']);
    const key = (await asClient(t(), buyer.token, 'order/service', { id: orderId })).result.api_key as string;
    expect((await t().call('/api/guest/serviceapikey/get_info', { key })).result).toMatchObject({ valid: 0, reason: 'TRIAL_ENDED' });
    expectError(await t().admin('order/trial_extend', { id: orderId, days: 3 }), 409);
  });

  it('ends a trial now with a saved card: the first invoice is charged off-session and the order runs on', async () => {
    const bought = await purchase(t(), paidPlan);
    await payByCard(stand, bought.hash);
    const { orderId } = await onTrial({ id: bought.clientId, token: bought.token });
    expect((await order(orderId)).card_on_file).toBe(true);
    expect((await t().admin('order/trial_end', { id: orderId })).body.error).toBeNull();
    await t().services.outbox.runDue(new Date());
    const [, first] = await invoicesOf(bought.clientId);
    expect(first).toMatchObject({ status: 'paid' });
    const ended = await order(orderId);
    expect(ended).toMatchObject({ status: 'active', on_trial: false });
    expect(Date.parse(ended.expires_at)).toBeGreaterThan(Date.now() + 25 * DAY);
  });
});
