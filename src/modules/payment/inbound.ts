// Inbound provider events (CONTRACT §9 webhooks): verified, stored by (gateway, event id) before anything is acted on,
// then applied in one transaction that also sets `processed_at`. The claim on `processed_at` is what makes an event
// act once: a redelivery, ten concurrent deliveries or a replay after a crash all find it set and change nothing.
// An event stored but not applied (a crash in between, a refund that came before its payment) is applied on its next
// delivery or by `processPending` (at start and every minute). The HTTP route in front (src/http/provider-webhooks.ts)
// hands over the raw body and headers to `receiveSigned`; everything after that is here.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { GatewayEventTable } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { errors } from '../../platform/errors.ts';
import { isoSeconds } from '../../lib/time.ts';
import { PaymentNotYetKnown, type GatewayPayments } from './gateway-payments.ts';
import { InvalidEventError, type GatewayEffect, type GatewayRegistry, type PaymentGateway, type VerifiedEvent } from './gateways.ts';
import type { PaymentService } from './service.ts';

type EventRow = Selectable<GatewayEventTable>;

export type Outcome = 'applied' | 'duplicate' | 'deferred';

/** How long a stored event that cannot be applied yet keeps being retried. */
export const PENDING_DAYS = 3;

export interface InboundEventDeps {
  db: Kysely<Database>;
  gateways: GatewayRegistry;
  gatewayPayments: Pick<GatewayPayments, 'applyPayment' | 'recordFailure' | 'applyRefund'>;
  payments: Pick<PaymentService, 'saveMethod'>;
  log?: (message: string, error: unknown) => void;
}

export function createInboundEvents({ db, gateways, gatewayPayments, payments, log }: InboundEventDeps) {
  async function applyEffect(trx: Kysely<Database>, gateway: PaymentGateway, effect: GatewayEffect, now: Date): Promise<void> {
    switch (effect.kind) {
      case 'paid':
        await gatewayPayments.applyPayment(trx, gateway, effect, now);
        return;
      case 'failed':
        await gatewayPayments.recordFailure(trx, gateway, effect, now);
        return;
      case 'refunded':
        await gatewayPayments.applyRefund(trx, gateway, effect, now);
        return;
      case 'method_saved':
        await payments.saveMethod(trx, gateway, effect.customerRef, effect.method, now);
        return;
    }
  }

  /** Applies one stored event unless it already was. */
  async function process(row: EventRow, now = new Date()): Promise<Outcome> {
    if (row.processed_at !== null) return 'duplicate';
    const gateway = gateways.byCode(row.gateway);
    try {
      // Interpreting may ask the provider for details; it happens before the transaction, which stays short.
      const effects = gateway?.interpretEvent === undefined ? [] : await gateway.interpretEvent({ id: row.event_id, type: row.type, payload: row.payload });
      return await inTransaction(db, async (trx) => {
        const claimed = await trx
          .updateTable('gateway_events')
          .set({ processed_at: isoSeconds(now), attempts: row.attempts + 1, last_error: null })
          .where('id', '=', row.id)
          .where('processed_at', 'is', null)
          .executeTakeFirst();
        if (Number(claimed.numUpdatedRows) !== 1) return 'duplicate';
        for (const effect of effects) await applyEffect(trx, gateway!, effect, now);
        return 'applied';
      });
    } catch (error) {
      await db
        .updateTable('gateway_events')
        .set({ attempts: row.attempts + 1, last_error: error instanceof Error ? error.message.slice(0, 1000) : 'failed' })
        .where('id', '=', row.id)
        .where('processed_at', 'is', null)
        .execute();
      if (error instanceof PaymentNotYetKnown) return 'deferred';
      throw error;
    }
  }

  /**
   * A verified event: stored (a repeated id is not stored again), then applied if it has not been. Throws when
   * applying failed for a reason that may pass (the provider unreachable): the caller answers 500 so the provider
   * delivers again; the stored event is also picked up by processPending.
   */
  async function receive(gateway: PaymentGateway, event: VerifiedEvent, now = new Date()): Promise<Outcome> {
    await db
      .insertInto('gateway_events')
      .values({ gateway: gateway.code, event_id: event.id, type: event.type, payload: event.payload, received_at: isoSeconds(now), processed_at: null, last_error: null })
      .onConflict((oc) => oc.columns(['gateway', 'event_id']).doNothing())
      .execute();
    const row = await db.selectFrom('gateway_events').selectAll().where('gateway', '=', gateway.code).where('event_id', '=', event.id).executeTakeFirstOrThrow();
    return process(row, now);
  }

  return {
    receive,

    /**
     * `POST /webhooks/<gateway code>`: the gateway with this code verifies the signature on the exact bytes received
     * (404 for a code no gateway answers to, 400 with nothing stored for an event that is not genuine), then the event
     * is received as above.
     */
    async receiveSigned(code: string, rawBody: Buffer, headers: Record<string, string | string[] | undefined>): Promise<Outcome> {
      const gateway = gateways.byCode(code);
      if (gateway?.verifyEvent === undefined) throw errors.notFound('Payment gateway');
      let event: VerifiedEvent;
      try {
        event = await gateway.verifyEvent(rawBody, headers);
      } catch (error) {
        if (error instanceof InvalidEventError) throw errors.badRequest(error.message);
        throw error;
      }
      return receive(gateway, event);
    },

    /** Stores an event without applying it: what a crash right after storing leaves behind (tests use it). */
    async storeOnly(gateway: PaymentGateway, event: VerifiedEvent, now = new Date()): Promise<void> {
      await db
        .insertInto('gateway_events')
        .values({ gateway: gateway.code, event_id: event.id, type: event.type, payload: event.payload, received_at: isoSeconds(now), processed_at: null, last_error: null })
        .onConflict((oc) => oc.columns(['gateway', 'event_id']).doNothing())
        .execute();
    },

    /**
     * Applies every stored event not applied yet, oldest first; returns how many were applied. An event still waiting
     * after PENDING_DAYS (a refund of a payment that never reached Tollgate) stays stored, with its last error, for
     * staff to look at, and is no longer retried.
     */
    async processPending(now = new Date()): Promise<number> {
      const cutoff = isoSeconds(new Date(now.getTime() - PENDING_DAYS * 86_400_000));
      const rows = await db
        .selectFrom('gateway_events')
        .selectAll()
        .where('processed_at', 'is', null)
        .where('received_at', '>=', cutoff)
        .orderBy('id')
        .limit(500)
        .execute();
      let applied = 0;
      for (const row of rows) {
        try {
          if ((await process(row, now)) === 'applied') applied += 1;
        } catch (error) {
          log?.(`provider event ${row.gateway}/${row.event_id} could not be applied`, error);
        }
      }
      return applied;
    },
  };
}

export type InboundEvents = ReturnType<typeof createInboundEvents>;
