// Free trials (issue 24 item 7): the order module's half. A trial is claimed when its order is placed — once per
// client and product, and, for a trial that needs a card, once per card fingerprint and product; the unique indexes of
// `trial_claims` are the compare-and-set, so of two checkouts at once one gets the trial and the other a 409. The
// scheduler (cron/trials.ts) then reminds and ends trials through the calls below; only this module writes `orders`.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { addSeconds, isoSeconds } from '../../lib/time.ts';
import { trialConfig, trialOf, TRIAL_REMINDER_DAYS, type TrialTerms } from '../../lib/trial.ts';
import { readConfig } from '../product/service.ts';
import type { ProductRow } from '../product/service.ts';
import type { OrderRow } from './types.ts';
import './events.ts';
import '../payment/events.ts';

/** What a trial that needs a card asks of the payment module: the fingerprint of the client's saved card. */
export interface CardFingerprints {
  defaultCardFingerprint(trx: Kysely<Database>, clientId: number): Promise<string | null>;
}

/** The trial an order starts on: when it ends and the config it runs on meanwhile (the trial's included units). */
export interface StartedTrial {
  endsAt: Date;
  config: string;
}

const DAY_SECONDS = 86_400;

/** How the order module moves an order's status (order/service.ts transition), for trials that wait for a card. */
export type OrderTransition = (trx: Kysely<Database>, id: number, action: 'activate' | 'cancel', options: { reason?: string; now: Date; trial?: StartedTrial }) => Promise<unknown>;

/** Tells the order's product type (and `order.updated` listeners) that staff moved its expiry (order/service.ts). */
export type ExpiryMoved = (trx: Kysely<Database>, id: number) => Promise<void>;

export interface OrderTrialsDeps {
  db: Kysely<Database>;
  events: EventBus;
  cards: CardFingerprints;
  transition: OrderTransition;
  expiryMoved: ExpiryMoved;
}

export function createOrderTrials({ db, events, cards, transition, expiryMoved }: OrderTrialsDeps) {
  const ids = (rows: Array<{ id: number }>): number[] => rows.map((row) => row.id);

  /** Who holds the trial of `productId` by this client or (when given) this card; null when no one does. */
  async function claimOf(trx: Kysely<Database>, clientId: number, productId: number, fingerprint: string | null): Promise<{ client_id: number } | null> {
    const taken = await trx
      .selectFrom('trial_claims')
      .select(['client_id'])
      .where('product_id', '=', productId)
      .where((eb) => (fingerprint === null ? eb('client_id', '=', clientId) : eb.or([eb('client_id', '=', clientId), eb('card_fingerprint', '=', fingerprint)])))
      .executeTakeFirst();
    return taken ?? null;
  }

  /** Takes the trial for the order, or says why not (never throws for a refusal: a webhook's transaction goes on). */
  async function tryClaim(
    trx: Kysely<Database>,
    order: Pick<OrderRow, 'id' | 'client_id'>,
    product: ProductRow,
    terms: TrialTerms,
    fingerprint: string | null,
    now: Date,
  ): Promise<StartedTrial | { refusal: string }> {
    const taken = await claimOf(trx, order.client_id, product.id, fingerprint);
    if (taken !== null) return { refusal: taken.client_id === order.client_id ? 'You have already had the free trial of this plan' : 'This card has already been used for the free trial of this plan' };
    // The unique indexes decide between two checkouts that both found no claim: the second inserts nothing (ON
    // CONFLICT DO NOTHING, so PostgreSQL's transaction is not aborted either).
    const inserted = await trx
      .insertInto('trial_claims')
      .values({ order_id: order.id, client_id: order.client_id, product_id: product.id, card_fingerprint: fingerprint, created_at: isoSeconds(now) })
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .executeTakeFirst();
    if (inserted === undefined) return { refusal: 'The free trial of this plan was just taken by another checkout' };
    return { endsAt: addSeconds(now, terms.days * DAY_SECONDS), config: JSON.stringify(trialConfig(readConfig(product.config), terms)) };
  }

  /** Moves the trial on from `from` with compare-and-set; false when another run got there first. */
  async function setState(trx: Kysely<Database>, row: OrderRow, from: OrderRow['trial_state'], to: OrderRow['trial_state'], fields: Partial<OrderRow>, now: Date) {
    const result = await trx
      .updateTable('orders')
      .set({ ...fields, trial_state: to, updated_at: isoSeconds(now) })
      .where('id', '=', row.id)
      .where('trial_state', '=', from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  const api = {
    /** The product's trial terms, or null when it offers none. */
    termsOf: (product: Pick<ProductRow, 'config'>): TrialTerms | null => trialOf(readConfig(product.config)),

    /**
     * Claims the trial of `product` for the new order inside `trx` (409 when the client, or the card, had it already;
     * 422 when a card is needed and none is saved) and returns how the order starts. With `awaitCard` (the client's
     * checkout, when a gateway can save a card without a payment), a trial that needs a card and finds none answers
     * 'awaiting_card' instead of 422: the order waits, pending, and starts when a card is saved (startAwaiting).
     */
    async claim(
      trx: Kysely<Database>,
      order: Pick<OrderRow, 'id' | 'client_id'>,
      product: ProductRow,
      terms: TrialTerms,
      now: Date,
      options: { awaitCard?: boolean } = {},
    ): Promise<StartedTrial | 'awaiting_card'> {
      let fingerprint: string | null = null;
      if (terms.requires_card) {
        fingerprint = await cards.defaultCardFingerprint(trx, order.client_id);
        if (fingerprint === null && options.awaitCard === true) {
          // The client rule is known now: refuse at checkout rather than after the card is saved.
          if ((await claimOf(trx, order.client_id, product.id, null)) !== null) throw errors.conflict('You have already had the free trial of this plan');
          await trx.updateTable('orders').set({ trial_state: 'awaiting_card', updated_at: isoSeconds(now) }).where('id', '=', order.id).execute();
          return 'awaiting_card';
        }
        if (fingerprint === null) {
          throw errors.invalid('payment_method', 'is required: the free trial of this plan needs a saved card (pay once by card with auto-pay on to save one)');
        }
      }
      const claimed = await tryClaim(trx, order, product, terms, fingerprint, now);
      if ('refusal' in claimed) throw errors.conflict(claimed.refusal);
      return claimed;
    },

    /**
     * A card was saved for `clientId` (payment/events.ts `payment_method.saved`): each of its orders waiting for a card
     * starts its trial on that card, or — the client or the card had this plan's trial already — is canceled with the
     * refusal as its reason, never invoiced. A compare-and-set on the trial state, so a redelivered or concurrent
     * event starts each order once.
     */
    async startAwaiting(trx: Kysely<Database>, clientId: number, fingerprint: string | null, now: Date): Promise<number> {
      const waiting = await trx.selectFrom('orders').selectAll().where('client_id', '=', clientId).where('trial_state', '=', 'awaiting_card').where('status', '=', 'pending_setup').orderBy('id').execute();
      let started = 0;
      for (const row of waiting) {
        const product = await trx.selectFrom('products').selectAll().where('id', '=', row.product_id).executeTakeFirst();
        const terms = product === undefined ? null : trialOf(readConfig(product.config));
        const claimed: StartedTrial | { refusal: string } =
          product === undefined || terms === null ? { refusal: 'The plan no longer offers a free trial' }
          : fingerprint === null ? { refusal: 'The card could not be identified; the free trial needs a card' }
          : await tryClaim(trx, row, product, terms, fingerprint, now);
        if ('refusal' in claimed) {
          if (!(await setState(trx, row, 'awaiting_card', null, {}, now))) continue;
          await transition(trx, row.id, 'cancel', { reason: claimed.refusal, now });
          continue;
        }
        if (!(await setState(trx, row, 'awaiting_card', 'running', {}, now))) continue;
        await transition(trx, row.id, 'activate', { now, trial: claimed });
        started += 1;
      }
      return started;
    },

    /** Running trials ending within the reminder window, not reminded yet (and not canceled by their client). */
    async remindersDue(now: Date): Promise<number[]> {
      const rows = await db
        .selectFrom('orders')
        .select('id')
        .where('trial_state', '=', 'running')
        .where('trial_reminded', '=', 0)
        .where('status', '=', 'active')
        .where('cancel_at_period_end', '=', 0)
        .where('trial_ends_at', '>', isoSeconds(now))
        .where('trial_ends_at', '<=', isoSeconds(addSeconds(now, TRIAL_REMINDER_DAYS * DAY_SECONDS)))
        .orderBy('id')
        .execute();
      return ids(rows);
    },

    /** Trials in `state` that ended at or before `until`. */
    async endedIn(state: 'running' | 'charging', until: Date): Promise<number[]> {
      const rows = await db.selectFrom('orders').select('id').where('trial_state', '=', state).where('trial_ends_at', '<=', isoSeconds(until)).orderBy('id').execute();
      return ids(rows);
    },

    /** Marks the reminder sent and emits `order.trial_will_end`, once (compare-and-set on `trial_reminded`). */
    async remind(trx: Kysely<Database>, row: OrderRow, now: Date): Promise<boolean> {
      if (row.trial_ends_at === null) return false;
      const result = await trx.updateTable('orders').set({ trial_reminded: 1, updated_at: isoSeconds(now) }).where('id', '=', row.id).where('trial_reminded', '=', 0).executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      await events.emit('order.trial_will_end', { orderId: row.id, clientId: row.client_id, productId: row.product_id, status: row.status, trialEndsAt: row.trial_ends_at }, trx);
      return true;
    },

    /**
     * Ends a running trial: the order goes back to its plan's config (the trial's included units end with it; the
     * product type hears `order.trial_ended`) and its trial moves to `to`. False when it was not running.
     */
    async end(trx: Kysely<Database>, row: OrderRow, to: 'charging' | 'ended', now: Date): Promise<boolean> {
      const product = await trx.selectFrom('products').select('config').where('id', '=', row.product_id).executeTakeFirst();
      const config = product?.config ?? row.config;
      if (!(await setState(trx, row, 'running', to, { config }, now))) return false;
      await events.emit('order.trial_ended', { orderId: row.id, clientId: row.client_id, productId: row.product_id, status: row.status, config: readConfig(config) }, trx);
      return true;
    },

    /**
     * Staff move a running trial's end (admin/order/trial_extend, trial_end): `trial_ends_at` and `expires_at` to
     * `endsAt`, the reminder due again when the new end is more than the reminder window away, with a compare-and-set
     * on the end it read. 409 when the order is not on a running trial or changed meanwhile.
     */
    async moveEnd(trx: Kysely<Database>, row: OrderRow, endsAt: Date, now: Date): Promise<void> {
      if (row.trial_state !== 'running' || row.trial_ends_at === null) throw errors.conflict('The order is not on a free trial');
      const end = isoSeconds(endsAt);
      const remindAgain = endsAt.getTime() > addSeconds(now, TRIAL_REMINDER_DAYS * DAY_SECONDS).getTime();
      const result = await trx
        .updateTable('orders')
        .set({ trial_ends_at: end, expires_at: end, updated_at: isoSeconds(now), ...(remindAgain && { trial_reminded: 0 }) })
        .where('id', '=', row.id)
        .where('trial_state', '=', 'running')
        .where('trial_ends_at', '=', row.trial_ends_at)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The order was changed by another request; try again');
      await expiryMoved(trx, row.id);
    },

    /** Closes a trial whose first charge had its time (`charging` → `ended`). */
    settle: (trx: Kysely<Database>, row: OrderRow, now: Date): Promise<boolean> => setState(trx, row, 'charging', 'ended', {}, now),
  };

  // A card saved (by "Add a card", the trial's own setup Checkout, or a payment with auto-pay on) starts the client's
  // trials waiting for one, in the transaction that stores the card.
  events.on('payment_method.saved', async ({ clientId, fingerprint }, trx) => {
    await api.startAwaiting(trx, clientId, fingerprint, new Date());
  });

  return api;
}

export type OrderTrials = ReturnType<typeof createOrderTrials>;
