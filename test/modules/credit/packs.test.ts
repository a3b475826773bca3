// Top-up packs (issue 24 item 3): staff's CRUD with its refusals and permission, the client's list of enabled packs,
// buying one by card through the Stripe stand-in (20 concurrent deliveries of each event) and by the manual gateway:
// the amount as `top_up` and the bonus as an expiring `grant`, each written once; a pack edited or deleted after the
// purchase changes nothing already bought. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, asStaff, expectError, staffWith } from '../../helpers/selling-fixtures.ts';
import { deliver, payment, startCardPayment, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const DAY = 86_400_000;

describe('top-up packs', () => {
  let stand: StripeStand;
  beforeAll(async () => {
    stand = await stripeStand();
  });
  afterEach(async () => {
    await expectLedgerConsistent(stand.t.services.db);
  });
  afterAll(async () => {
    await stand.close();
  });

  const admin = (path: string, params: Record<string, unknown> = {}) => stand.t.admin(`credit/${path}`, params);
  const lines = async (token: string) => (await asClient(stand.t, token, 'client/balance_get_list')).result.list as Array<Record<string, unknown>>;
  const total = async (token: string) => (await asClient(stand.t, token, 'client/balance_get_total')).result as string;

  it('lets staff create, read, update and delete packs, and refuses bad ones', async () => {
    const id = (await admin('pack_create', { title: 'Starter', amount: '10.00', bonus: '2.50', bonus_days: 30 })).result as number;
    expect(await admin('pack_get', { id })).toMatchObject({
      status: 200,
      result: { id, title: 'Starter', amount: '10.00', bonus: '2.50', bonus_days: 30, currency: 'USD', enabled: true },
    });
    expect((await admin('pack_update', { id, title: 'Starter+', amount: 12, enabled: false })).result).toBe(true);
    expect((await admin('pack_get', { id })).result).toMatchObject({ title: 'Starter+', amount: '12.00', bonus: '2.50', bonus_days: 30, enabled: false });
    // A bonus set to 0 takes its lifetime with it.
    expect((await admin('pack_update', { id, bonus: '0' })).result).toBe(true);
    expect((await admin('pack_get', { id })).result).toMatchObject({ bonus: '0.00', bonus_days: null });
    expect((await admin('pack_get_list')).result.list.map((pack: { id: number }) => pack.id)).toContain(id);

    expectInvalid(await admin('pack_create', { title: 'Zero', amount: '0' }), 'amount');
    expectInvalid(await admin('pack_create', { title: 'Negative', amount: '-5' }), 'amount');
    expectInvalid(await admin('pack_create', { title: 'Decimals', amount: '1.234' }), 'amount');
    expectInvalid(await admin('pack_create', { title: 'Bad bonus', amount: '5', bonus: '-1' }), 'bonus');
    expectInvalid(await admin('pack_create', { title: 'Days alone', amount: '5', bonus_days: 10 }), 'bonus_days');
    expectInvalid(await admin('pack_update', { id, amount: '-1' }), 'amount');
    expectInvalid(await admin('pack_create', { title: '', amount: '5' }), 'title');
    expectError(await admin('pack_get', { id: 999_999 }), 404);
    expectError(await admin('pack_update', { id: 999_999, title: 'x' }), 404);
    // Staff without the permission are refused; a client cannot reach the admin actions.
    const clerk = await staffWith(stand.t, ['client.manage_balance']);
    expectError(await asStaff(stand.t, clerk, 'credit/pack_create', { title: 'Nope', amount: '5' }), 403);
    const client = await stand.t.createClient();
    expectError(await asClient(stand.t, client.token, 'credit/pack_delete', { id }), 740, 404);

    expect((await admin('pack_delete', { id })).result).toBe(true);
    expectError(await admin('pack_delete', { id }), 404);
    expectError(await admin('pack_get', { id }), 404);
  });

  it('shows clients the enabled packs only, and refuses to sell a disabled or unknown one', async () => {
    const on = (await admin('pack_create', { title: 'On', amount: '20' })).result as number;
    const off = (await admin('pack_create', { title: 'Off', amount: '30', enabled: false })).result as number;
    const client = await stand.t.createClient();
    const listed = (await asClient(stand.t, client.token, 'credit/pack_get_list')).result.list.map((pack: { id: number }) => pack.id);
    expect(listed).toContain(on);
    expect(listed).not.toContain(off);
    expectError(await asClient(stand.t, client.token, 'credit/pack_buy', { id: off }), 404);
    expectError(await asClient(stand.t, client.token, 'credit/pack_buy', { id: 999_999 }), 404);
    expectError(await stand.t.call('/api/client/credit/pack_buy', { id: on }), 201, 401);
  });

  it('credits a pack bought by card once, the amount as a top-up and the bonus as an expiring grant', async () => {
    const { t, stripe } = stand;
    const pack = (await admin('pack_create', { title: 'Card pack', amount: '10.00', bonus: '1.50', bonus_days: 7 })).result as number;
    const client = await t.createClient();
    const hash = (await asClient(t, client.token, 'credit/pack_buy', { id: pack })).result as string;
    const invoice = (await t.call('/api/guest/invoice/get', { hash })).result;
    expect(invoice).toMatchObject({ status: 'unpaid', total: '10.00', tax: '0.00' });
    expect(invoice.items).toEqual([expect.objectContaining({ task: 'deposit', total: '10.00', title: expect.stringContaining('Card pack') })]);
    // Staff change and delete the pack after the purchase: the invoice keeps what was bought.
    expect((await admin('pack_update', { id: pack, bonus: '9.00' })).result).toBe(true);
    expect((await admin('pack_delete', { id: pack })).result).toBe(true);

    const session = await startCardPayment(stand, hash);
    const events = stripe.completeSession(session);
    const replies = await Promise.all(events.flatMap((event) => Array.from({ length: 20 }, () => deliver(stand, event))));
    // Under load a delivery may answer 5xx (a call back to Stripe slower than STRIPE_TIMEOUT_MS): Stripe then delivers
    // it again, as here. What counts is that nothing is written twice.
    expect(replies.filter((reply) => reply.status !== 200 && reply.status < 500).map((reply) => reply.body)).toEqual([]);
    for (const event of events) expect((await deliver(stand, event)).status).toBe(200);
    expect((await t.call('/api/guest/invoice/get', { hash })).result.status).toBe('paid');
    expect(await total(client.token)).toBe('11.50');
    const written = await lines(client.token);
    expect(written).toHaveLength(2);
    const grant = written.find((line) => line.type === 'grant')!;
    expect(written.find((line) => line.type === 'top_up')).toMatchObject({ amount: '10.00', invoice_id: invoice.id });
    expect(grant).toMatchObject({ amount: '1.50', invoice_id: invoice.id });
    const expires = Date.parse(grant.expires_at as string);
    expect(Math.abs(expires - (Date.now() + 7 * DAY))).toBeLessThan(60_000);
    // The bonus is spent first (promotional, expiring).
    expect((await t.admin('client/balance_add_funds', { id: client.id, amount: '-1.00', description: 'Spend' })).result).toBe(true);
    const spent = await t.services.db.selectFrom('credit_allocations').select(['lot_id', 'amount']).where('debit_id', '=', (await lines(client.token))[0]!.id as number).execute();
    expect(spent).toEqual([{ lot_id: grant.id, amount: 100 }]);
  });

  it('credits a pack paid by the manual gateway once, also under 20 concurrent confirmations; a pack without bonus writes no grant', async () => {
    const { t } = stand;
    const withBonus = (await admin('pack_create', { title: 'Transfer pack', amount: '25', bonus: '5' })).result as number;
    const plain = (await admin('pack_create', { title: 'Plain pack', amount: '7' })).result as number;
    const client = await t.createClient();
    const hash = (await asClient(t, client.token, 'credit/pack_buy', { id: withBonus })).result as string;
    const manual = await payment(t, { hash, gateway_id: 'custom' });
    expect(manual.body.error).toBeNull();
    const invoice = (await t.call('/api/guest/invoice/get', { hash })).result;
    const confirmations = await Promise.all(Array.from({ length: 20 }, () => t.admin('invoice/mark_as_paid', { id: invoice.id })));
    expect(confirmations.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(await total(client.token)).toBe('30.00');
    const grant = (await lines(client.token)).find((line) => line.type === 'grant');
    expect(grant).toMatchObject({ amount: '5.00', expires_at: null });

    const plainHash = (await asClient(t, client.token, 'credit/pack_buy', { id: plain })).result as string;
    expect((await t.admin('invoice/mark_as_paid', { id: (await t.call('/api/guest/invoice/get', { hash: plainHash })).result.id })).body.error).toBeNull();
    expect(await total(client.token)).toBe('37.00');
    expect((await lines(client.token)).filter((line) => line.type === 'grant')).toHaveLength(1);
  });
});
