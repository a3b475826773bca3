// Paying invoices through gateways (CONTRACT §9): guest/invoice/payment for Stripe and the manual gateway, its
// failures and rate limit; refunds through Stripe; admin/invoice/transaction_get_list; saved cards and auto-pay.
// Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrap } from '../../../src/bootstrap.ts';
import { createTestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { StripeStandIn } from '../../helpers/stripe-server.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';
import { deliver, payByCard, payment, purchase, startCardPayment, stripeStand, transactionsOf, type StripeStand } from '../../helpers/stripe-fixtures.ts';

describe('card payments through Stripe', () => {
  let stand: StripeStand;
  let plan: number;

  beforeAll(async () => {
    stand = await stripeStand();
    plan = await makeProduct(stand.t, { title: 'Card plan' });
  });
  afterAll(async () => {
    await stand.close();
  });

  describe('guest/invoice/payment', () => {
    it('takes the keys from the settings too (sealed in the database), at once and at the next start', async () => {
      // Stored keys must have Stripe's shape (issue 21); the stand-in accepts this one too.
      const storedKey = 'sk_test_51StoredInSettings0000';
      stand.stripe.acceptedKeys.add(storedKey);
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-stripe-settings-'));
      // The second start must see the same database: a file on SQLite (the PostgreSQL test database already is one).
      const t = await createTestApp({ STRIPE_API_BASE: stand.stripe.url, ...(process.env.TEST_DATABASE_URL ? {} : { DATABASE_URL: `sqlite:${join(dir, 't.db')}` }) });
      try {
        expect(t.services.gateways.byCode('stripe')).toBeUndefined();
        expect((await t.admin('system/settings_update', { stripe_secret_key: storedKey, stripe_webhook_secret: 'whsec_StoredInSettings000000' })).result).toBe(true);
        const stored = await t.services.db.selectFrom('settings').select('value').where('name', '=', 'stripe_secret_key').executeTakeFirstOrThrow();
        expect(stored.value).not.toContain(storedKey);
        expect(t.services.gateways.byCode('stripe')).toBeDefined();
        const restarted = await bootstrap(t.services.config);
        try {
          const gateway = restarted.gateways.byCode('stripe');
          expect(gateway).toBeDefined();
          const bought = await purchase(t, await makeProduct(t));
          expect(await restarted.payments.start(bought.hash, 'stripe')).toEqual({ redirect_url: expect.stringContaining('/pay/cs_test_') });
        } finally {
          await restarted.close();
        }
      } finally {
        await t.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('lists Stripe among the gateways when both keys are set', async () => {
      const gateways = await stand.t.call('/api/guest/invoice/gateways', {});
      expect(gateways.result).toEqual([
        { id: 1, code: 'custom', title: 'Manual payment', instructions: expect.any(String) },
        { id: 2, code: 'stripe', title: 'Card (Stripe)', instructions: expect.any(String) },
      ]);
    });

    it('without both keys there is no Stripe gateway', async () => {
      for (const env of [{}, { STRIPE_SECRET_KEY: 'sk_test_x' }, { STRIPE_WEBHOOK_SECRET: 'whsec_x' }] as Array<Record<string, string>>) {
        const t = await createTestApp(env);
        try {
          expect((await t.call('/api/guest/invoice/gateways', {})).result.map((gateway: { code: string }) => gateway.code)).toEqual(['custom']);
          const bought = await purchase(t, await makeProduct(t));
          expectInvalid(await payment(t, { hash: bought.hash, gateway_id: 'stripe' }), 'gateway_id');
          const response = await t.app.inject({ method: 'POST', url: '/webhooks/stripe', payload: '{}', headers: { 'content-type': 'application/json' } });
          expect(response.statusCode).toBe(404);
        } finally {
          await t.close();
        }
      }
    });

    it('returns a Checkout Session for the invoice total and currency, for one reused Stripe customer', async () => {
      const { t, stripe } = stand;
      const client = await t.createClient({ first_name: 'Ada', last_name: 'Lovelace' });
      const first = await purchase(t, plan, client);
      const before = stripe.requestsTo('POST', '/v1/customers').length;
      const reply = await payment(t, { hash: first.hash, gateway_id: 'stripe' });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ result: { redirect_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/pay\/cs_test_/) }, error: null });
      const created = stripe.requestsTo('POST', '/v1/customers');
      expect(created).toHaveLength(before + 1);
      expect(created.at(-1)!.body).toMatchObject({ email: client.email, name: 'Ada Lovelace', metadata: { client_id: String(client.id) } });
      const sessionRequest = stripe.requestsTo('POST', '/v1/checkout/sessions').at(-1)!;
      expect(sessionRequest.authorization).toBe('Bearer sk_test_tollgate_local');
      const customer = (await t.services.db.selectFrom('gateway_customers').selectAll().where('client_id', '=', client.id).executeTakeFirstOrThrow()).customer_ref;
      expect(sessionRequest.body).toEqual({
        mode: 'payment',
        customer,
        client_reference_id: String(first.invoiceId),
        line_items: [{ quantity: '1', price_data: { currency: 'usd', unit_amount: '1000', product_data: { name: `Pro forma ${first.invoiceId}` } } }],
        payment_intent_data: { metadata: { invoice_id: String(first.invoiceId) }, setup_future_usage: 'off_session' },
        metadata: { invoice_id: String(first.invoiceId) },
        success_url: `https://billing.example.com/invoices/${first.invoiceId}?payment=success`,
        cancel_url: `https://billing.example.com/invoices/${first.invoiceId}?payment=canceled`,
      });

      // A second invoice (and a second try) of the same client reuse the customer; by numeric id too.
      const second = await purchase(t, plan, client);
      expect((await payment(t, { hash: second.hash, gateway_id: 2 })).status).toBe(200);
      expect((await payment(t, { hash: second.hash, gateway_id: '2' })).status).toBe(200);
      expect(stripe.requestsTo('POST', '/v1/customers')).toHaveLength(before + 1);
      expect(stripe.requestsTo('POST', '/v1/checkout/sessions').at(-1)!.body.customer).toBe(customer);
    });

    it('two first payments at once create one customer', async () => {
      const { t } = stand;
      const client = await t.createClient();
      const a = await purchase(t, plan, client);
      const b = await purchase(t, plan, client);
      const replies = await Promise.all([payment(t, { hash: a.hash, gateway_id: 'stripe' }), payment(t, { hash: b.hash, gateway_id: 'stripe' })]);
      expect(replies.map((reply) => reply.status)).toEqual([200, 200]);
      const rows = await t.services.db.selectFrom('gateway_customers').selectAll().where('client_id', '=', client.id).execute();
      expect(rows).toHaveLength(1);
      const customers = new Set(stand.stripe.requestsTo('POST', '/v1/checkout/sessions').slice(-2).map((request) => request.body.customer));
      expect(customers).toEqual(new Set([rows[0]!.customer_ref]));
    });

    it('does not save the card when the client turned auto-pay off', async () => {
      const { t, stripe } = stand;
      const client = await t.createClient();
      expect((await asClient(t, client.token, 'profile/update', { auto_pay: false })).result).toBe(true);
      expect((await asClient(t, client.token, 'profile/get')).result.auto_pay).toBe(false);
      const bought = await purchase(t, plan, client);
      await startCardPayment(stand, bought.hash);
      const body = stripe.requestsTo('POST', '/v1/checkout/sessions').at(-1)!.body;
      expect(body.payment_intent_data).toEqual({ metadata: { invoice_id: String(bought.invoiceId) } });
      // Paying still works; no card is kept.
      for (const event of stripe.completeSession(stripe.sessionFor(bought.invoiceId).id as string)) expect((await deliver(stand, event)).status).toBe(200);
      expect((await t.admin('invoice/get', { id: bought.invoiceId })).result.status).toBe('paid');
      expect((await asClient(t, client.token, 'payment_method/get_list')).result).toEqual([]);
    });

    it('the manual gateway answers its instructions', async () => {
      const bought = await purchase(stand.t, plan);
      for (const gateway_id of ['custom', 1, '1']) {
        const reply = await payment(stand.t, { hash: bought.hash, gateway_id });
        expect(reply.body).toEqual({ result: { instructions: expect.stringContaining('bank transfer') }, error: null });
      }
    });

    it('bad input: 422 for missing or wrong parameters, 404 for a wrong hash', async () => {
      const { t } = stand;
      const bought = await purchase(t, plan);
      expectInvalid(await payment(t, { gateway_id: 'stripe' }), 'hash');
      expectInvalid(await payment(t, { hash: bought.hash }), 'gateway_id');
      expectInvalid(await payment(t, { hash: bought.hash, gateway_id: 'paypal' }), 'gateway_id');
      expectInvalid(await payment(t, { hash: bought.hash, gateway_id: 99 }), 'gateway_id');
      expectInvalid(await payment(t, { hash: bought.hash, gateway_id: { id: 2 } }), 'gateway_id');
      expectInvalid(await payment(t, { hash: 'x'.repeat(65), gateway_id: 'stripe' }), 'hash');
      expectError(await payment(t, { hash: 'wrong-hash', gateway_id: 'stripe' }), 404);
      expectError(await payment(t, { hash: bought.hash.slice(0, -1), gateway_id: 'stripe' }), 404);
      // GET works as for every guest action.
      expect((await t.call('/api/guest/invoice/payment', { hash: bought.hash, gateway_id: 'custom' }, { method: 'GET' })).status).toBe(200);
    });

    it('a paid, canceled or refunded invoice cannot be paid (409)', async () => {
      const { t } = stand;
      const paid = await purchase(t, plan);
      await payByCard(stand, paid.hash);
      expectError(await payment(t, { hash: paid.hash, gateway_id: 'stripe' }), 409);
      expectError(await payment(t, { hash: paid.hash, gateway_id: 'custom' }), 409);
      const canceled = await purchase(t, plan);
      expect((await t.admin('invoice/cancel', { id: canceled.invoiceId })).result).toBe(true);
      expectError(await payment(t, { hash: canceled.hash, gateway_id: 'stripe' }), 409);
      expect((await t.admin('invoice/refund', { id: paid.invoiceId })).result).toBe(true);
      expectError(await payment(t, { hash: paid.hash, gateway_id: 'stripe' }), 409);
    });

    it('Stripe unreachable: 502, nothing half-done', async () => {
      const { t, stripe } = stand;
      const bought = await purchase(t, plan);
      stripe.failAll = true;
      try {
        const reply = await payment(t, { hash: bought.hash, gateway_id: 'stripe' });
        expectError(reply, 502);
        expect(reply.body.error!.message).not.toContain('sk_test');
      } finally {
        stripe.failAll = false;
      }
      expect(await t.services.db.selectFrom('gateway_customers').selectAll().where('client_id', '=', bought.clientId).execute()).toEqual([]);
      expect((await payment(t, { hash: bought.hash, gateway_id: 'stripe' })).status).toBe(200);
    });
  });

  describe('admin/invoice/refund through Stripe', () => {
    it('refunds in full by default, with an idempotency key; the webhook afterwards changes nothing', async () => {
      const { t, stripe } = stand;
      const bought = await purchase(t, plan);
      const [, succeeded] = await payByCard(stand, bought.hash);
      const paidOrder = (await t.admin('order/get', { id: bought.orderId })).result;
      expect((await t.admin('invoice/refund', { id: bought.invoiceId })).result).toBe(true);
      const request = stripe.requestsTo('POST', '/v1/refunds').at(-1)!;
      expect(request.body).toEqual({ payment_intent: succeeded!.data.object.id, amount: '1000' });
      expect(request.idempotencyKey).toBe(`tollgate-refund-${bought.invoiceId}-0-1000`);
      expect((await t.admin('invoice/get', { id: bought.invoiceId })).result.status).toBe('refunded');
      // A full refund stops nothing (docs/selling.md, "Refunds"): the order stays active until it expires.
      const refundedOrder = (await t.admin('order/get', { id: bought.orderId })).result;
      expect([refundedOrder.status, refundedOrder.expires_at]).toEqual(['active', paidOrder.expires_at]);
      expect((await deliver(stand, stripe.events.at(-1)!)).status).toBe(200);
      expect((await transactionsOf(t, bought.invoiceId)).map((row) => [row.type, row.status, row.amount, row.gateway])).toEqual([
        ['payment', 'processed', 1000, 'stripe'],
        ['refund', 'refunded', 1000, 'stripe'],
      ]);
      expectError(await t.admin('invoice/refund', { id: bought.invoiceId }), 409);
    });

    it('a partial refund leaves the invoice paid and the order as it is; the rest can follow', async () => {
      const { t, stripe } = stand;
      const bought = await purchase(t, plan);
      await payByCard(stand, bought.hash);
      expect((await t.admin('invoice/refund', { id: bought.invoiceId, amount: '2.50' })).result).toBe(true);
      expect((await t.admin('invoice/get', { id: bought.invoiceId })).result.status).toBe('paid');
      expect((await t.admin('order/get', { id: bought.orderId })).result.status).toBe('active');
      expectInvalid(await t.admin('invoice/refund', { id: bought.invoiceId, amount: '7.51' }), 'amount');
      expectInvalid(await t.admin('invoice/refund', { id: bought.invoiceId, amount: '0' }), 'amount');
      expectInvalid(await t.admin('invoice/refund', { id: bought.invoiceId, amount: '-1' }), 'amount');
      expectInvalid(await t.admin('invoice/refund', { id: bought.invoiceId, amount: '1.005' }), 'amount');
      expectInvalid(await t.admin('invoice/refund', { id: bought.invoiceId, amount: true }), 'amount');
      expect((await t.admin('invoice/refund', { id: bought.invoiceId })).result).toBe(true);
      expect(stripe.requestsTo('POST', '/v1/refunds').slice(-2).map((request) => request.body.amount)).toEqual(['250', '750']);
      expect((await t.admin('invoice/get', { id: bought.invoiceId })).result.status).toBe('refunded');
      // Both webhooks arrive afterwards, twice: nothing more is recorded.
      for (const refunded of stripe.events.filter((event) => event.type === 'charge.refunded').slice(-2)) {
        expect((await deliver(stand, refunded)).status).toBe(200);
        expect((await deliver(stand, refunded)).status).toBe(200);
      }
      expect((await transactionsOf(t, bought.invoiceId)).map((row) => [row.type, row.amount])).toEqual([
        ['payment', 1000],
        ['refund', 250],
        ['refund', 750],
      ]);
    });

    it('Stripe refusing or unreachable: 502 and nothing recorded; a manual payment is refunded without Stripe', async () => {
      const { t, stripe } = stand;
      const bought = await purchase(t, plan);
      await payByCard(stand, bought.hash);
      stripe.failAll = true;
      try {
        expectError(await t.admin('invoice/refund', { id: bought.invoiceId }), 502);
      } finally {
        stripe.failAll = false;
      }
      expect((await t.admin('invoice/get', { id: bought.invoiceId })).result.status).toBe('paid');
      expect(await transactionsOf(t, bought.invoiceId)).toHaveLength(1);

      const manual = await purchase(t, plan);
      await t.admin('invoice/mark_as_paid', { id: manual.invoiceId });
      const refundsBefore = stripe.requestsTo('POST', '/v1/refunds').length;
      expect((await t.admin('invoice/refund', { id: manual.invoiceId, amount: 4 })).result).toBe(true);
      expect((await t.admin('invoice/refund', { id: manual.invoiceId })).result).toBe(true);
      expect(stripe.requestsTo('POST', '/v1/refunds')).toHaveLength(refundsBefore);
      expect((await transactionsOf(t, manual.invoiceId)).map((row) => [row.type, row.amount, row.status])).toEqual([
        ['payment', 1000, 'processed'],
        ['refund', 400, 'refunded'],
        ['refund', 600, 'refunded'],
      ]);
    });

    it('wrong state, unknown invoice, wrong role', async () => {
      const { t } = stand;
      const bought = await purchase(t, plan);
      expectError(await t.admin('invoice/refund', { id: bought.invoiceId }), 409);
      expectError(await t.admin('invoice/refund', { id: 999_999 }), 404);
      expectInvalid(await t.admin('invoice/refund', {}), 'id');
      const viewer = await staffWith(t, ['invoice.view']);
      expectError(await asStaff(t, viewer, 'invoice/refund', { id: bought.invoiceId }), 403);
      expectError(await asClient(t, bought.token, 'invoice/refund', { id: bought.invoiceId }), 740, 404);
    });
  });

  describe('admin/invoice/transaction_get_list', () => {
    it('lists payments, failures and refunds with the contract fields, filtered and paginated', async () => {
      const { t } = stand;
      const client = await t.createClient();
      const card = await purchase(t, plan, client);
      const session = await startCardPayment(stand, card.hash);
      expect((await deliver(stand, stand.stripe.failSession(session, 'Your card was declined.'))).status).toBe(200);
      const [, succeeded] = await payByCard(stand, card.hash);
      await t.admin('invoice/refund', { id: card.invoiceId, amount: '1.00' });
      const manual = await purchase(t, plan, client);
      await t.admin('invoice/mark_as_paid', { id: manual.invoiceId, transaction_id: 'BANK-7', gateway_id: 1 });

      const all = await t.admin('invoice/transaction_get_list', { client_id: client.id });
      expect(all.result).toMatchObject({ total: 4, page: 1, per_page: 100, pages: 1 });
      expect(all.result.list.map((row: { status: string }) => row.status)).toEqual(['processed', 'refunded', 'processed', 'failed']);
      const cardPayment = all.result.list[2];
      expect(cardPayment).toEqual({
        id: expect.any(Number),
        invoice_id: card.invoiceId,
        invoice_number: expect.stringMatching(/^INV-\d+$/),
        client_id: client.id,
        gateway: 'stripe',
        txn_id: succeeded!.data.object.id,
        type: 'payment',
        amount: '10.00',
        currency: 'USD',
        status: 'processed',
        message: null,
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
      });
      expect(all.result.list[1]).toMatchObject({ type: 'refund', amount: '1.00', status: 'refunded', gateway: 'stripe' });
      expect(all.result.list[3]).toMatchObject({ status: 'failed', message: 'Your card was declined.' });
      expect(all.result.list[0]).toMatchObject({ gateway: 'custom', txn_id: 'BANK-7', invoice_id: manual.invoiceId });

      expect((await t.admin('invoice/transaction_get_list', { invoice_id: manual.invoiceId })).result.total).toBe(1);
      expect((await t.admin('invoice/transaction_get_list', { client_id: client.id, gateway: 'stripe' })).result.total).toBe(3);
      expect((await t.admin('invoice/transaction_get_list', { client_id: client.id, status: 'failed' })).result.total).toBe(1);
      const paged = await t.admin('invoice/transaction_get_list', { client_id: client.id, per_page: 3, page: 2 });
      expect(paged.result).toMatchObject({ total: 4, pages: 2, page: 2, per_page: 3 });
      expect(paged.result.list).toHaveLength(1);
      expect((await t.admin('invoice/transaction_get_list', { client_id: client.id, page: 9 })).result.list).toEqual([]);

      expectInvalid(await t.admin('invoice/transaction_get_list', { status: 'paid' }), 'status');
      expectInvalid(await t.admin('invoice/transaction_get_list', { per_page: 501 }), 'per_page');
      expectInvalid(await t.admin('invoice/transaction_get_list', { invoice_id: 'x' }), 'invoice_id');
      const nobody = await staffWith(t, ['client.view']);
      expectError(await asStaff(t, nobody, 'invoice/transaction_get_list'), 403);
      const viewer = await staffWith(t, ['invoice.view']);
      expect((await asStaff(t, viewer, 'invoice/transaction_get_list', { client_id: client.id })).result.total).toBe(4);
      expectError(await asClient(t, client.token, 'invoice/transaction_get_list'), 740, 404);
      expectError(await t.call('/api/admin/invoice/transaction_get_list', {}), 201, 401);
    });
  });

  describe('saved cards and auto-pay', () => {
    it('lists the client\'s own cards, the newest the default; delete detaches at Stripe', async () => {
      const { t, stripe } = stand;
      const client = await t.createClient();
      const other = await t.createClient();
      await payByCard(stand, (await purchase(t, plan, client)).hash);
      await payByCard(stand, (await purchase(t, plan, client)).hash);
      await payByCard(stand, (await purchase(t, plan, other)).hash);
      const list = (await asClient(t, client.token, 'payment_method/get_list')).result as Array<{ id: number; default: boolean }>;
      expect(list).toHaveLength(2);
      expect(list.map((card) => card.default)).toEqual([true, false]);
      const otherCard = (await asClient(t, other.token, 'payment_method/get_list')).result[0];

      expectError(await asClient(t, client.token, 'payment_method/delete', { id: otherCard.id }), 404);
      expectError(await asClient(t, client.token, 'payment_method/delete', { id: 999_999 }), 404);
      expectInvalid(await asClient(t, client.token, 'payment_method/delete', {}), 'id');
      expectInvalid(await asClient(t, client.token, 'payment_method/delete', { id: 'abc' }), 'id');
      expectError(await t.call('/api/client/payment_method/get_list', {}), 201, 401);

      const ref = (await t.services.db.selectFrom('payment_methods').select('method_ref').where('id', '=', list[0]!.id).executeTakeFirstOrThrow()).method_ref;
      expect((await asClient(t, client.token, 'payment_method/delete', { id: list[0]!.id })).result).toBe(true);
      expect(stripe.requestsTo('POST', `/v1/payment_methods/${ref}/detach`)).toHaveLength(1);
      expect(stripe.methods.get(ref)!.customer).toBeNull();
      const left = (await asClient(t, client.token, 'payment_method/get_list')).result;
      expect(left).toEqual([{ ...list[1], default: true }]);
      expectError(await asClient(t, client.token, 'payment_method/delete', { id: list[0]!.id }), 404);
      // The other client's card is untouched.
      expect((await asClient(t, other.token, 'payment_method/get_list')).result).toEqual([otherCard]);
    });

    it('a card already detached at Stripe is still removed; Stripe down keeps it (502)', async () => {
      const { t, stripe } = stand;
      const client = await t.createClient();
      await payByCard(stand, (await purchase(t, plan, client)).hash);
      const [card] = (await asClient(t, client.token, 'payment_method/get_list')).result;
      stripe.failAll = true;
      try {
        expectError(await asClient(t, client.token, 'payment_method/delete', { id: card.id }), 502);
      } finally {
        stripe.failAll = false;
      }
      expect((await asClient(t, client.token, 'payment_method/get_list')).result).toHaveLength(1);
      const ref = (await t.services.db.selectFrom('payment_methods').select('method_ref').where('id', '=', card.id).executeTakeFirstOrThrow()).method_ref;
      stripe.methods.get(ref)!.customer = null;
      expect((await asClient(t, client.token, 'payment_method/delete', { id: card.id })).result).toBe(true);
      expect((await asClient(t, client.token, 'payment_method/get_list')).result).toEqual([]);
    });

    it('auto_pay: default on, switched by the client; wrong types are 422', async () => {
      const { t } = stand;
      const client = await t.createClient();
      expect((await asClient(t, client.token, 'profile/get')).result.auto_pay).toBe(true);
      expect((await asClient(t, client.token, 'profile/update', { auto_pay: false })).result).toBe(true);
      expect((await asClient(t, client.token, 'profile/get')).result.auto_pay).toBe(false);
      expect((await t.call('/api/client/profile/update', { auto_pay: 'true' }, { basic: ['client', client.token], raw: { body: 'auto_pay=1', contentType: 'application/x-www-form-urlencoded' } })).result).toBe(true);
      expect((await asClient(t, client.token, 'profile/get')).result.auto_pay).toBe(true);
      expectInvalid(await asClient(t, client.token, 'profile/update', { auto_pay: 'maybe' }), 'auto_pay');
      // Other fields still update alongside.
      expect((await asClient(t, client.token, 'profile/update', { auto_pay: false, city: 'Lyon' })).result).toBe(true);
      expect((await asClient(t, client.token, 'profile/get')).result).toMatchObject({ auto_pay: false, city: 'Lyon' });
    });

    it('the auto_pay_default setting decides for clients who never chose; a client\'s own choice stays', async () => {
      const { t } = stand;
      const undecided = await t.createClient();
      const decided = await t.createClient();
      await asClient(t, decided.token, 'profile/update', { auto_pay: true });
      expect((await t.admin('system/settings_update', { auto_pay_default: false })).result).toBe(true);
      try {
        expect((await asClient(t, undecided.token, 'profile/get')).result.auto_pay).toBe(false);
        expect((await asClient(t, decided.token, 'profile/get')).result.auto_pay).toBe(true);
        const bought = await purchase(t, plan, undecided);
        await startCardPayment(stand, bought.hash);
        expect(stand.stripe.requestsTo('POST', '/v1/checkout/sessions').at(-1)!.body.payment_intent_data).toEqual({ metadata: { invoice_id: String(bought.invoiceId) } });
      } finally {
        expect((await t.admin('system/settings_update', { auto_pay_default: true })).result).toBe(true);
      }
      expect((await asClient(t, undecided.token, 'profile/get')).result.auto_pay).toBe(true);
    });

    it('AUTO_PAY_DEFAULT=false: clients who never chose are not charged off-session', async () => {
      const t = await createTestApp({ AUTO_PAY_DEFAULT: 'false' });
      try {
        const client = await t.createClient();
        expect((await asClient(t, client.token, 'profile/get')).result.auto_pay).toBe(false);
      } finally {
        await t.close();
      }
    });
  });
});

describe('PAYMENT rate limit: per IP and per invoice', () => {
  it('counts per IP across invoices and per invoice across IPs', async () => {
    const stripe = new StripeStandIn();
    await stripe.start();
    const t = await createTestApp({ ...stripe.env(), RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PAYMENT: '3/3600', RATE_LIMIT_SIGNUP: '100/60', RATE_LIMIT_CHECKOUT: '100/60' });
    try {
      const plan = await makeProduct(t);
      const a = await purchase(t, plan);
      const b = await purchase(t, plan);
      const c = await purchase(t, plan);
      // One IP, three invoices: the fourth call is refused.
      for (const bought of [a, b, c]) expect((await payment(t, { hash: bought.hash, gateway_id: 'custom' }, '10.0.0.1')).status).toBe(200);
      const limited = await payment(t, { hash: a.hash, gateway_id: 'custom' }, '10.0.0.1');
      expectError(limited, 429);
      expect(limited.headers['retry-after']).toBeDefined();
      // One invoice, many IPs: `a` was paid at once from 10.0.0.1; two more IPs reach its limit.
      expect((await payment(t, { hash: a.hash, gateway_id: 'custom' }, '10.0.0.2')).status).toBe(200);
      expect((await payment(t, { hash: a.hash, gateway_id: 'custom' }, '10.0.0.3')).status).toBe(200);
      expectError(await payment(t, { hash: a.hash, gateway_id: 'stripe' }, '10.0.0.4'), 429);
      // Another invoice from a fresh IP is fine.
      expect((await payment(t, { hash: b.hash, gateway_id: 'custom' }, '10.0.0.5')).status).toBe(200);
    } finally {
      await t.close();
      await stripe.stop();
    }
  });
});
