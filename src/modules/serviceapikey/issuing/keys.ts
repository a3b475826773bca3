// Issuing and changing keys: the first key when an order is activated, the order's changes reaching its keys (status,
// expiry, plan, deletion: the product type hooks, inside the order's transaction), and staff's and clients' switch,
// parameters and reset (a new key, the old one optionally validating for a grace period). The only writer of
// `api_keys` besides several-keys.ts; every write marks the keys it changes through the sync (sync/key-sync.ts).
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { safeEqual, type SecretBox } from '../../../lib/crypto.ts';
import { parseObject } from '../../../lib/json.ts';
import { generateKey, couldBeKey } from '../../../lib/keygen.ts';
import { nowIso } from '../../../lib/time.ts';
import { errors } from '../../../platform/errors.ts';
import type { EventBus } from '../../../platform/events.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import type { OrderSnapshot } from '../../product/product-type.ts';
import { keysWithOrders, orderKeys, type KeyRecords } from '../key-records.ts';
import { flatCustomOf, KEY_OPTION_NAMES, keyOptionsOf, normalizeCustom, readApiKeyConfig, type ApiKeyConfig } from '../options.ts';
import { refToken } from '../sync/invalidation.ts';
import type { KeySync } from '../sync/key-sync.ts';
import type { Metering } from '../usage/metering.ts';
import { USAGE_OPTION_NAMES, usageOptionsOf, type UsageOptions } from '../usage/usage-plan.ts';

/** The longest grace period a reset may keep the old key working for (7 days). */
export const MAX_GRACE_SECONDS = 604_800;

export interface KeyIssuingDeps {
  db: Kysely<Database>;
  secrets: Pick<SecretBox, 'hash' | 'encrypt' | 'decrypt'>;
  /** The apikey.* events, announced inside the change's transaction (security notices, webhooks). */
  events: Pick<EventBus, 'emit'>;
  sync: Pick<KeySync, 'changedInTransaction' | 'change' | 'orderChangedIn'>;
  records: Pick<KeyRecords, 'requireKey'>;
  /** The meters forget a deleted order's keys. */
  meters: ReadonlyArray<Pick<Metering, 'forget'>>;
}

/**
 * The custom parameters named directly in admin update's `config`: everything but FOSSBilling's flat
 * `custom_<name>` keys (read separately) and the key options. FOSSBilling's admin form sends the key's options
 * (`length`, `split`, `split_interval`, `case`) with every update; they cannot change an issued key, so they are
 * ignored rather than stored as parameters.
 */
function customOfUpdate(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(config)) {
    if (!name.startsWith('custom_') && !KEY_OPTION_NAMES.has(name)) out[name] = value;
  }
  return out;
}

/** The options stored with each key: the key options, the §12 limits and the usage options, from a product config. */
function storedOptions(config: ApiKeyConfig, usage: UsageOptions): string {
  return JSON.stringify({
    length: config.length,
    split: config.split,
    split_interval: config.split_interval,
    capitalization: config.capitalization,
    enforce_limit: config.enforce_limit,
    rate_limit: config.rate_limit,
    max_keys: config.max_keys,
    ...usage,
  });
}

export function createKeyIssuing(deps: KeyIssuingDeps) {
  const { db, secrets, sync, events } = deps;

  /** A fresh key that no other key has (unique key_hash), with its hash and sealed copy. */
  async function freshKey(trx: Kysely<Database>, config: ApiKeyConfig) {
    for (let attempt = 0; attempt < 10; attempt++) {
      const key = generateKey(keyOptionsOf(config));
      const hash = secrets.hash(key);
      // Unique among current keys and replaced keys in their grace period (both are looked up by hash).
      const taken = await trx
        .selectFrom('api_keys')
        .select('id')
        .where((eb) => eb.or([eb('key_hash', '=', hash), eb('grace_hash', '=', hash)]))
        .executeTakeFirst();
      if (taken === undefined) return { key, hash, sealed: secrets.encrypt(key) };
    }
    throw errors.conflict('Could not generate a unique key with these options; use a longer key length');
  }

  return {
    freshKey,

    // ---- product type hooks (inside the order's transaction) ----

    /** Issues the order's first key on its first activation; later activations keep its keys. */
    issue: async (trx: Kysely<Database>, order: OrderSnapshot): Promise<void> => {
      const existing = await orderKeys(trx, order.id);
      if (existing.length > 0) {
        sync.orderChangedIn(trx, order.id, existing);
        return;
      }
      const config = readApiKeyConfig(order.config);
      const { hash, sealed } = await freshKey(trx, config);
      const now = nowIso();
      const inserted = await trx
        .insertInto('api_keys')
        .values({
          order_id: order.id,
          client_id: order.client_id,
          key_hash: hash,
          key_enc: sealed,
          valid: 1,
          options: storedOptions(config, usageOptionsOf(order.config)),
          config: JSON.stringify(config.custom),
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      sync.changedInTransaction(trx, [hash], [refToken(inserted.id, order.id)]);
      await events.emit('apikey.issued', { orderId: order.id, clientId: order.client_id, keyId: inserted.id }, trx);
    },

    /** The order changed (status, expiry): the keys stay, their cached records go. */
    orderChanged: async (trx: Kysely<Database>, order: OrderSnapshot): Promise<void> => {
      sync.orderChangedIn(trx, order.id, await orderKeys(trx, order.id));
    },

    /**
     * The order moved to another plan: the keys keep their material and take the new plan's custom parameters,
     * limit enforcement, rate limit and key allowance. Inside the order's transaction; caches drop them on commit.
     */
    planChanged: async (trx: Kysely<Database>, orderId: number, productConfig: Record<string, unknown>): Promise<void> => {
      const existing = await orderKeys(trx, orderId);
      if (existing.length === 0) return;
      const config = readApiKeyConfig(productConfig);
      // The new plan's usage options replace the old ones on every key of the order; the period's overage is billed at
      // the plan in force when the period closes (CONTRACT §12, docs/pricing-by-use.md).
      const plan = { enforce_limit: config.enforce_limit, rate_limit: config.rate_limit, max_keys: config.max_keys, ...usageOptionsOf(productConfig) };
      for (const key of existing) {
        const kept = Object.fromEntries(Object.entries(parseObject(key.options)).filter(([name]) => !USAGE_OPTION_NAMES.includes(name)));
        const options = { ...kept, ...plan };
        await trx
          .updateTable('api_keys')
          .set({ config: JSON.stringify(config.custom), options: JSON.stringify(options), updated_at: nowIso() })
          .where('id', '=', key.id)
          .execute();
      }
      sync.orderChangedIn(trx, orderId, existing);
    },

    /** The order is being deleted: so are its keys, with their usage. */
    orderDeleted: async (trx: Kysely<Database>, order: OrderSnapshot): Promise<void> => {
      const existing = await orderKeys(trx, order.id);
      if (existing.length === 0) return;
      const ids = existing.map((key) => key.id);
      await trx.deleteFrom('api_key_usage').where('api_key_id', 'in', ids).execute();
      await trx.deleteFrom('api_keys').where('id', 'in', ids).execute();
      for (const id of ids) for (const meter of deps.meters) meter.forget(id);
      sync.orderChangedIn(trx, order.id, existing);
    },

    // ---- staff and clients ----

    /** admin/serviceapikey/update: the validity switch and the custom parameters of all the order's keys; never a key. */
    update: async (params: { order_id: number; valid?: boolean | undefined; config?: Record<string, unknown> | undefined; api_key?: string | undefined }): Promise<void> => {
      const keys = await keysWithOrders(db).where('api_keys.order_id', '=', params.order_id).orderBy('api_keys.id').execute();
      const current = keys[0];
      if (current === undefined) throw errors.apiKeyNotFound();
      if (params.api_key !== undefined && !keys.some((key) => safeEqual(params.api_key!, secrets.decrypt(key.key_enc)))) {
        throw errors.invalid('api_key', 'cannot be changed by update; use reset to issue a new key');
      }
      const config = params.config === undefined ? undefined : normalizeCustom(customOfUpdate(params.config), flatCustomOf(params.config), 'config');
      if (params.valid === undefined && config === undefined) return;
      await inTransaction(db, async (trx) => {
        sync.orderChangedIn(trx, params.order_id, await orderKeys(trx, params.order_id));
        await trx
          .updateTable('api_keys')
          .set({
            updated_at: nowIso(),
            ...(params.valid !== undefined && { valid: params.valid ? 1 : 0 }),
            ...(config !== undefined && { config: JSON.stringify(config) }),
          })
          .where('order_id', '=', params.order_id)
          .execute();
        const event = { orderId: current.order_id, clientId: current.client_id, keyId: current.id };
        if (params.valid === false && current.valid === 1) await events.emit('apikey.disabled', event, trx);
        if (params.valid === true && current.valid === 0) await events.emit('apikey.enabled', event, trx);
        if (config !== undefined) await events.emit('apikey.updated', event, trx);
      });
    },

    /**
     * admin and client reset: a new key for an active order. With `grace_seconds` the replaced key keeps validating
     * that long (`rotating_until`); a key holds one grace at a time, so resetting again during a grace ends the
     * earlier grace at once (the key replaced first stops, the one replaced now takes the grace).
     */
    reset: async (by: { id?: number | undefined; order_id?: number | undefined; key?: string | undefined; grace_seconds?: number | undefined }, clientId?: number): Promise<string> => {
      if (by.id === undefined && by.order_id === undefined && by.key !== undefined && !couldBeKey(by.key)) throw errors.apiKeyNotFound();
      const current = await deps.records.requireKey(db, by, clientId);
      if (current.status !== 'active') throw errors.conflict(`The order is ${current.status}: only an active order's key can be reset`);
      const grace = by.grace_seconds ?? 0;
      const hashes = current.grace_hash === null ? [current.key_hash] : [current.key_hash, current.grace_hash];
      return sync.change(hashes, [refToken(current.id, current.order_id)], async (trx) => {
        const config = readApiKeyConfig(parseObject(current.options));
        const fresh = await freshKey(trx, config);
        const now = Date.now();
        const result = await trx
          .updateTable('api_keys')
          .set({
            key_hash: fresh.hash,
            key_enc: fresh.sealed,
            grace_hash: grace > 0 ? current.key_hash : null,
            grace_until: grace > 0 ? new Date(now + grace * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') : null,
            updated_at: nowIso(),
          })
          .where('id', '=', current.id)
          .where('key_hash', '=', current.key_hash)
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The key was changed by another request; try again');
        const order = await trx.selectFrom('orders').select('status').where('id', '=', current.order_id).executeTakeFirst();
        if (order?.status !== 'active') throw errors.conflict('The order is no longer active');
        sync.changedInTransaction(trx, [fresh.hash]);
        await events.emit('apikey.reset', { orderId: current.order_id, clientId: current.client_id, keyId: current.id }, trx);
        return fresh.key;
      });
    },
  };
}
