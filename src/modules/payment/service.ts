// Payments by the client through online gateways: each client's auto-pay choice, their customer record at a gateway
// (created once, reused), saved payment methods, and starting a payment for an invoice (CONTRACT §9). The only writer
// of `payment_profiles`, `gateway_customers` and `payment_methods`.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { errors } from '../../platform/errors.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { Selling } from '../currency/selling.ts';
import type { ClientService } from '../client/service.ts';
import type { InvoicePayments } from '../invoice/payments.ts';
import { toGatewayInvoice } from './gateway-payments.ts';
import type { GatewayRegistry, PaymentGateway, SavedMethod } from './gateways.ts';
import { gatewayFailure } from './gateway-failures.ts';
import './events.ts';

export interface PaymentMethodRecord {
  id: number;
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
  default: boolean;
}

export interface PaymentServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  gateways: GatewayRegistry;
  clients: Pick<ClientService, 'get'>;
  /** A card saved before any sale is set up in the default currency (a client's own once their first order fixed it). */
  selling: Pick<Selling, 'defaultCode'>;
  /** The invoice a payment is started for, read from its owner. */
  invoices: Pick<InvoicePayments, 'payableByHash'>;
  publicUrl: string;
  /** The `auto_pay_default` setting: auto-pay of clients who never chose. */
  autoPayDefault: () => boolean;
}

export function createPaymentService({ db, events, gateways, clients, selling, invoices, publicUrl, autoPayDefault }: PaymentServiceDeps) {
  async function autoPay(trx: Kysely<Database>, clientId: number): Promise<boolean> {
    const row = await trx.selectFrom('payment_profiles').select('auto_pay').where('client_id', '=', clientId).executeTakeFirst();
    return row?.auto_pay === null || row?.auto_pay === undefined ? autoPayDefault() : row.auto_pay === 1;
  }

  /** The client's customer at `gateway`, created at the provider on first use and stored. */
  async function customerOf(gateway: PaymentGateway, clientId: number): Promise<string> {
    const known = await db.selectFrom('gateway_customers').select('customer_ref').where('gateway', '=', gateway.code).where('client_id', '=', clientId).executeTakeFirst();
    if (known !== undefined) return known.customer_ref;
    if (gateway.createCustomer === undefined) throw new Error(`Gateway ${gateway.code} has no customers`);
    const client = await clients.get(clientId);
    const name = [client.first_name, client.last_name].filter((part) => part !== null && part !== '').join(' ');
    let ref: string;
    try {
      ref = await gateway.createCustomer({ id: clientId, email: client.email, name });
    } catch (error) {
      throw gatewayFailure(gateway, 'create a customer', error, `${gateway.title} could not be reached; nothing was charged. Try again in a moment.`);
    }
    // Two first payments at once: the provider's idempotency gives both the same customer; one row is kept.
    await db
      .insertInto('gateway_customers')
      .values({ client_id: clientId, gateway: gateway.code, customer_ref: ref, created_at: isoSeconds(new Date()) })
      .onConflict((oc) => oc.columns(['gateway', 'client_id']).doNothing())
      .execute();
    const stored = await db.selectFrom('gateway_customers').select('customer_ref').where('gateway', '=', gateway.code).where('client_id', '=', clientId).executeTakeFirstOrThrow();
    return stored.customer_ref;
  }

  return {
    /** guest/invoice/gateways: the gateways an invoice can be paid with now, and what each tells the payer. */
    listGateways(): Array<{ id: number; code: string; title: string; instructions: string | null }> {
      return gateways.list().map((gateway) => ({ id: gateway.id, code: gateway.code, title: gateway.title, instructions: gateway.instructions(null) }));
    },

    async autoPay(clientId: number): Promise<boolean> {
      return autoPay(db, clientId);
    },

    async setAutoPay(clientId: number, on: boolean): Promise<void> {
      const now = isoSeconds(new Date());
      await db
        .insertInto('payment_profiles')
        .values({ client_id: clientId, auto_pay: on ? 1 : 0, updated_at: now })
        .onConflict((oc) => oc.column('client_id').doUpdateSet({ auto_pay: on ? 1 : 0, updated_at: now }))
        .execute();
    },

    /**
     * guest/invoice/payment: for an online gateway `{redirect_url}` of the provider's payment page for the invoice's
     * total, for the client's customer, saving the card unless the client turned auto-pay off; for the manual one
     * `{instructions}`. Only an unpaid invoice can be paid (409 otherwise); an unknown hash is 404.
     */
    async start(
      hash: string,
      gatewayRef: number | string,
      /** Counts the call against the invoice's rate limit (throws 429), before the provider is asked anything. */
      limit: (invoiceId: number) => Promise<void> = () => Promise.resolve(),
    ): Promise<{ redirect_url: string } | { instructions: string | null }> {
      const row = await invoices.payableByHash(hash);
      if (row === null) throw errors.notFound('Invoice');
      const gateway = gateways.resolve(gatewayRef);
      await limit(row.id);
      if (row.status !== 'unpaid') throw errors.conflict(`The invoice is ${row.status}; it cannot be paid`);
      const invoice = toGatewayInvoice(row);
      if (gateway.startPayment === undefined) return { instructions: gateway.instructions(invoice) };
      const customerRef = await customerOf(gateway, row.clientId);
      const back = `${publicUrl}/invoices/${row.id}`;
      try {
        return await gateway.startPayment({
          invoice,
          customerRef,
          saveMethod: await autoPay(db, row.clientId),
          successUrl: `${back}?payment=success`,
          cancelUrl: `${back}?payment=canceled`,
        });
      } catch (error) {
        throw gatewayFailure(gateway, 'start a payment', error, `${gateway.title} could not be reached; nothing was charged. Try again in a moment.`);
      }
    },

    /**
     * client/payment_method/setup: `{redirect_url}` of the provider's page where the client saves a card without paying
     * (Stripe Checkout in setup mode); the card is stored when the provider reports it (`method_saved`), like a card
     * saved by a payment. The client comes back to `returnPath`. 409 when no gateway can save cards.
     */
    async startSetup(clientId: number, returnPath: string): Promise<{ redirect_url: string }> {
      const gateway = gateways.list().find((candidate) => candidate.startSetup !== undefined);
      if (gateway?.startSetup === undefined) throw errors.conflict('No card payment gateway is configured; a card cannot be saved');
      const customerRef = await customerOf(gateway, clientId);
      const currency = (await clients.get(clientId)).currency ?? (await selling.defaultCode());
      const back = `${publicUrl}${returnPath}`;
      const separator = back.includes('?') ? '&' : '?';
      try {
        return await gateway.startSetup({ customerRef, clientId, currency, successUrl: `${back}${separator}setup=success`, cancelUrl: `${back}${separator}setup=canceled` });
      } catch (error) {
        throw gatewayFailure(gateway, 'start a card setup', error, `${gateway.title} could not be reached; no card was saved. Try again in a moment.`);
      }
    },

    /** Whether a gateway can save a card without a payment now (a trial that needs a card can then wait for one). */
    canSetUpCards: (): boolean => gateways.list().some((gateway) => gateway.startSetup !== undefined),

    /** A card the provider saved for off-session use: kept for the customer's client and made the default one. */
    async saveMethod(trx: Kysely<Database>, gateway: PaymentGateway, customerRef: string, method: SavedMethod, now: Date): Promise<void> {
      const customer = await trx.selectFrom('gateway_customers').select('client_id').where('gateway', '=', gateway.code).where('customer_ref', '=', customerRef).executeTakeFirst();
      if (customer === undefined) return;
      const inserted = await trx
        .insertInto('payment_methods')
        .values({
          client_id: customer.client_id,
          gateway: gateway.code,
          method_ref: method.ref,
          brand: method.brand.slice(0, 32),
          last4: method.last4.slice(0, 4),
          exp_month: method.expMonth,
          exp_year: method.expYear,
          is_default: 0,
          created_at: isoSeconds(now),
          fingerprint: method.fingerprint?.slice(0, 64) ?? null,
        })
        .onConflict((oc) => oc.columns(['gateway', 'method_ref']).doNothing())
        .returning('id')
        .executeTakeFirst();
      // The card saved last is the one renewals charge.
      const newest = await trx.selectFrom('payment_methods').select('id').where('client_id', '=', customer.client_id).orderBy('id', 'desc').executeTakeFirstOrThrow();
      await trx.updateTable('payment_methods').set({ is_default: 0 }).where('client_id', '=', customer.client_id).where('id', '!=', newest.id).execute();
      await trx.updateTable('payment_methods').set({ is_default: 1 }).where('id', '=', newest.id).execute();
      // Told once per card saved (a redelivered or second event of the same card inserts nothing).
      if (inserted !== undefined) {
        await events.emit('payment_method.saved', { clientId: customer.client_id, methodId: inserted.id, fingerprint: method.fingerprint?.slice(0, 64) ?? null }, trx);
      }
    },

    /**
     * The fingerprint of the client's default saved card (a free trial that needs a card is taken once per
     * fingerprint), or null when there is no saved card or the provider gave none.
     */
    async defaultCardFingerprint(trx: Kysely<Database>, clientId: number): Promise<string | null> {
      const row = await trx.selectFrom('payment_methods').select('fingerprint').where('client_id', '=', clientId).where('is_default', '=', 1).executeTakeFirst();
      return row?.fingerprint ?? null;
    },

    /** The card off-session charges use for this client, with the customer it belongs to; null when there is none. */
    async chargeableMethod(trx: Kysely<Database>, clientId: number, requireAutoPay = true): Promise<{ gateway: PaymentGateway; customerRef: string; methodRef: string } | null> {
      // Auto-recharge (credit/auto-recharge.ts) is its own consent: it asks with requireAutoPay false.
      if (requireAutoPay && !(await autoPay(trx, clientId))) return null;
      const method = await trx
        .selectFrom('payment_methods')
        .innerJoin('gateway_customers', (join) =>
          join.onRef('gateway_customers.client_id', '=', 'payment_methods.client_id').onRef('gateway_customers.gateway', '=', 'payment_methods.gateway'),
        )
        .select(['payment_methods.gateway', 'payment_methods.method_ref', 'gateway_customers.customer_ref'])
        .where('payment_methods.client_id', '=', clientId)
        .where('payment_methods.is_default', '=', 1)
        .executeTakeFirst();
      const gateway = method === undefined ? undefined : gateways.byCode(method.gateway);
      if (method === undefined || gateway?.chargeSavedMethod === undefined) return null;
      return { gateway, customerRef: method.customer_ref, methodRef: method.method_ref };
    },

    async listMethods(clientId: number): Promise<PaymentMethodRecord[]> {
      const rows = await db.selectFrom('payment_methods').selectAll().where('client_id', '=', clientId).orderBy('id', 'desc').execute();
      return rows.map((row) => ({ id: row.id, brand: row.brand, last4: row.last4, exp_month: row.exp_month, exp_year: row.exp_year, default: row.is_default === 1 }));
    },

    /** Forgets a saved card: detached at the provider first, so a card Tollgate no longer lists is never charged. */
    async deleteMethod(clientId: number, id: number): Promise<void> {
      const row = await db.selectFrom('payment_methods').selectAll().where('id', '=', id).where('client_id', '=', clientId).executeTakeFirst();
      if (row === undefined) throw errors.notFound('Payment method');
      const gateway = gateways.byCode(row.gateway);
      if (gateway?.detachMethod !== undefined) {
        try {
          await gateway.detachMethod(row.method_ref);
        } catch (error) {
          // The provider's reason first, then what it means here.
          const failure = gatewayFailure(gateway, 'detach a card', error, `${gateway.title} could not be reached.`);
          throw errors.gatewayFailed(`${failure.message.replace(/[.\s]*$/, '')}. The card was not removed; try again later.`);
        }
      }
      await inTransaction(db, async (trx) => {
        await trx.deleteFrom('payment_methods').where('id', '=', id).execute();
        if (row.is_default === 1) {
          const next = await trx.selectFrom('payment_methods').select('id').where('client_id', '=', clientId).orderBy('id', 'desc').executeTakeFirst();
          if (next !== undefined) await trx.updateTable('payment_methods').set({ is_default: 1 }).where('id', '=', next.id).execute();
        }
      });
    },
  };
}

export type PaymentService = ReturnType<typeof createPaymentService>;
