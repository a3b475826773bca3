// What the e-mail notices (src/modules/email/notices.ts) say about an order, read here because the order module owns
// the orders table. Read through the caller's transaction: the change a notice follows may not be committed yet.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export const orderNoticeReads = {
  /** The order's title, product type, client and expiry; undefined when the order is gone. */
  async summary(trx: Kysely<Database>, orderId: number) {
    return trx.selectFrom('orders').select(['id', 'title', 'type', 'client_id', 'expires_at']).where('id', '=', orderId).executeTakeFirst();
  },
};

export type OrderNoticeReads = typeof orderNoticeReads;
