// Several keys per order (CONTRACT §12): adding a key up to the plan's `max_keys`, deleting one (never the order's
// last), naming one. The keys of an order share its validity, parameters, quota and rate limit, so a new key copies
// them from the order's first key. Deleted keys are kept with `deleted_at` (their uses stay counted for the order).
import type { Kysely } from 'kysely';
import type { DialectName } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import type { EventBus } from '../../../platform/events.ts';
import { errors } from '../../../platform/errors.ts';
import { nowIso } from '../../../lib/time.ts';
import { readKeyLimits } from '../key-limits.ts';
import { readApiKeyConfig, type ApiKeyConfig } from '../options.ts';
import { parseObject } from '../../../lib/json.ts';

interface KeyRef {
  id: number;
  key_hash: string;
  grace_hash: string | null;
}

export interface SeveralKeysDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  events: Pick<EventBus, 'emit'>;
  /** A fresh key no other key has, with its hash and sealed copy. */
  freshKey(trx: Kysely<Database>, config: ApiKeyConfig): Promise<{ key: string; hash: string; sealed: string }>;
  /** Every key of an order, deleted ones included. */
  orderKeys(trx: Kysely<Database>, orderId: number): Promise<KeyRef[]>;
  /** These keys of the order change in `trx`: caches everywhere drop them once it has ended. */
  orderChangedIn(trx: Kysely<Database>, orderId: number, keys: KeyRef[]): void;
}

export function createSeveralKeys(deps: SeveralKeysDeps) {
  const { db } = deps;

  /** Locks the order's row until `trx` ends (PostgreSQL), so creates and deletes of its keys run one at a time. */
  async function lockOrder(trx: Kysely<Database>, orderId: number): Promise<void> {
    // SQLite has one writer: a concurrent transaction's first write waits for (or fails after) this one.
    if (deps.dialect === 'postgres') await trx.selectFrom('orders').select('id').where('id', '=', orderId).forUpdate().execute();
  }

  /** A live key by id, the caller's own when `clientId` is given; 404 otherwise. */
  async function ownKey(id: number, clientId?: number) {
    let query = db.selectFrom('api_keys').select(['id', 'order_id', 'client_id']).where('id', '=', id).where('deleted_at', 'is', null);
    if (clientId !== undefined) query = query.where('client_id', '=', clientId);
    const key = await query.executeTakeFirst();
    if (key === undefined) throw errors.apiKeyNotFound();
    return key;
  }

  return {
    /**
     * client and admin create: another key for an active order, up to its `max_keys` (409 past it). The order's
     * row is locked (PostgreSQL) or the write serialised (SQLite), so concurrent creates end at exactly max_keys.
     */
    async createKey(params: { order_id: number; name?: string | undefined }, clientId?: number): Promise<{ id: number; api_key: string; name: string | null }> {
      const name = params.name?.trim() === '' ? null : (params.name?.trim() ?? null);
      return inTransaction(db, async (trx) => {
        await lockOrder(trx, params.order_id);
        let existingQuery = trx
          .selectFrom('api_keys')
          .innerJoin('orders', 'orders.id', 'api_keys.order_id')
          .select(['api_keys.id', 'api_keys.order_id', 'api_keys.client_id', 'api_keys.key_hash', 'api_keys.grace_hash', 'api_keys.valid', 'api_keys.options', 'api_keys.config', 'orders.status'])
          .where('api_keys.order_id', '=', params.order_id)
          .where('api_keys.deleted_at', 'is', null);
        if (clientId !== undefined) existingQuery = existingQuery.where('api_keys.client_id', '=', clientId);
        const existing = await existingQuery.orderBy('api_keys.id').execute();
        const first = existing[0];
        if (first === undefined) throw errors.notFound('Order with API keys');
        if (first.status !== 'active') throw errors.conflict(`The order is ${first.status}: keys can be added to an active order only`);
        const options = parseObject(first.options);
        const { max_keys: maxKeys } = readKeyLimits(options);
        if (existing.length >= maxKeys) throw errors.conflict(`This plan allows ${maxKeys} key${maxKeys === 1 ? '' : 's'} per order; delete one first`);
        const fresh = await deps.freshKey(trx, readApiKeyConfig(options));
        const now = nowIso();
        const inserted = await trx
          .insertInto('api_keys')
          .values({
            order_id: first.order_id,
            client_id: first.client_id,
            key_hash: fresh.hash,
            key_enc: fresh.sealed,
            valid: first.valid,
            options: first.options,
            config: first.config,
            name,
            created_at: now,
            updated_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        // The siblings' records carry the order's key list (shared quota): they reload with the new one.
        deps.orderChangedIn(trx, first.order_id, [...existing, { id: inserted.id, key_hash: fresh.hash, grace_hash: null }]);
        await deps.events.emit('apikey.issued', { orderId: first.order_id, clientId: first.client_id, keyId: inserted.id }, trx);
        return { id: inserted.id, api_key: fresh.key, name };
      });
    },

    /**
     * client and admin delete: the key stops validating at once, everywhere; its uses stay counted for the order.
     * An order's last key cannot be deleted (409): reset it instead.
     */
    async deleteKey(id: number, clientId?: number): Promise<void> {
      const key = await ownKey(id, clientId);
      await inTransaction(db, async (trx) => {
        await lockOrder(trx, key.order_id);
        const live = await trx.selectFrom('api_keys').select('id').where('order_id', '=', key.order_id).where('deleted_at', 'is', null).execute();
        if (!live.some((row) => row.id === id)) throw errors.apiKeyNotFound();
        if (live.length <= 1) throw errors.conflict("An order's last key cannot be deleted; reset it to replace it");
        deps.orderChangedIn(trx, key.order_id, await deps.orderKeys(trx, key.order_id));
        const now = nowIso();
        const result = await trx
          .updateTable('api_keys')
          .set({ deleted_at: now, updated_at: now, grace_hash: null, grace_until: null })
          .where('id', '=', id)
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) throw errors.apiKeyNotFound();
        await deps.events.emit('apikey.disabled', { orderId: key.order_id, clientId: key.client_id, keyId: id }, trx);
      });
    },

    /** client and admin rename: a key's name (empty or null clears it). */
    async renameKey(id: number, name: string | null, clientId?: number): Promise<void> {
      const key = await ownKey(id, clientId);
      const clean = name === null || name.trim() === '' ? null : name.trim();
      await db.updateTable('api_keys').set({ name: clean, updated_at: nowIso() }).where('id', '=', key.id).where('deleted_at', 'is', null).execute();
    },
  };
}
