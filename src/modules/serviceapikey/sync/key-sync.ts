// Keeping every process's view of the keys right (the cross-process seam of the key module): every change to a key
// or its order marks the key "in flux" (the cache is bypassed for it) inside the transaction, and once the transaction
// has ended (`afterTransaction`, src/platform/transaction.ts) the key is dropped from the cache and the change is
// published to the other processes, whose caches drop it too and whose verifiers' events streams announce it.
// Changes made inside the order service's transaction (product type hooks) and the module's own take the same path.
import cluster from 'node:cluster';
import type { Kysely } from 'kysely';
import type { DialectName } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import type { EventBus } from '../../../platform/events.ts';
import { afterTransaction, inTransaction } from '../../../platform/transaction.ts';
import type { KeyCache } from '../check/cache.ts';
import { KeyEventHub } from './events-stream.ts';
import { ClusterChannel, LocalChannel, PostgresChannel, RedisChannel, creditToken, metersToken, refToken, type CreditChangeListener, type InvalidationChannel, type MetersChangeListener } from './invalidation.ts';

export interface KeySyncDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  postgresUrl: string | null;
  redisUrl: string | null;
  redisPrefix: string;
  cache: KeyCache;
  /** The client's account status changes: a suspended or reactivated client's keys change with it. */
  events: Pick<EventBus, 'on'>;
  log: (error: unknown, what: string) => void;
}

/** A key as the sync needs it: its id and the hashes it is cached under (its grace hash during a rotation). */
export interface KeyHashes {
  id: number;
  key_hash: string;
  grace_hash: string | null;
}

export function createKeySync(deps: KeySyncDeps) {
  const { db, cache, log } = deps;
  // Redis when set, else PostgreSQL's LISTEN/NOTIFY, else the cluster primary's relay, else this process alone.
  const channel: InvalidationChannel =
    deps.redisUrl !== null
      ? new RedisChannel(deps.redisUrl, deps.redisPrefix, cache, log)
      : deps.dialect === 'postgres' && deps.postgresUrl !== null
        ? new PostgresChannel(deps.postgresUrl, db, cache, log)
        : cluster.isWorker
          ? new ClusterChannel(cache)
          : new LocalChannel(cache);
  // The verifiers' events stream hears of every key change, from this process or another, through the channel.
  const keyEvents = new KeyEventHub();
  channel.onKeyChanged = (ref) => keyEvents.publish(ref);
  channel.onReset = () => keyEvents.resync();
  let listening = false;

  /** Starts hearing other processes' changes: on the first lookup that reaches the database, or the first stream. */
  function listen(): void {
    if (!listening) {
      listening = true;
      channel.listen();
    }
  }

  /** These keys change in `trx`: bypass the cache for them until it has ended, then drop them here and everywhere. */
  // `refs` (refToken) name the changed keys for the verifiers' events stream; published only on commit.
  function changedInTransaction(trx: Kysely<Database>, hashes: string[], refs: string[] = []): void {
    const now = Date.now();
    for (const hash of hashes) cache.beginChange(hash, now);
    afterTransaction(trx, (committed) => {
      for (const hash of hashes) cache.endChange(hash);
      channel.publish(committed ? [...hashes, ...refs] : hashes);
    });
  }

  /** Runs the module's own transaction changing these keys (more may be added inside with changedInTransaction). */
  function change<T>(hashes: string[], refs: string[], work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    return inTransaction(db, (trx) => {
      changedInTransaction(trx, hashes, refs);
      return work(trx);
    });
  }

  /** Marks every key of the order as changing in `trx` (its records, grace hashes included, drop everywhere on commit). */
  function orderChangedIn(trx: Kysely<Database>, orderId: number, keys: KeyHashes[]): void {
    if (keys.length === 0) return;
    const hashes: string[] = [];
    for (const key of keys) {
      hashes.push(key.key_hash);
      if (key.grace_hash !== null) hashes.push(key.grace_hash);
    }
    changedInTransaction(trx, hashes, keys.map((key) => refToken(key.id, orderId)));
  }

  /** The client's account became inactive or active again: its keys' records change with it, here and everywhere. */
  async function clientStatusChanged({ clientId }: { clientId: number }, trx: Kysely<Database>): Promise<void> {
    const keys = await trx.selectFrom('api_keys').select(['id', 'order_id', 'key_hash', 'grace_hash']).where('client_id', '=', clientId).execute();
    // Replaced keys still in their grace period are cached under their own hash: they go too.
    const hashes = keys.flatMap((key) => (key.grace_hash === null ? [key.key_hash] : [key.key_hash, key.grace_hash]));
    if (keys.length > 0) changedInTransaction(trx, hashes, keys.map((key) => refToken(key.id, key.order_id)));
  }
  deps.events.on('client.deactivated', clientStatusChanged);
  deps.events.on('client.reactivated', clientStatusChanged);

  return {
    channel,
    listen,
    changedInTransaction,
    change,
    orderChangedIn,
    /** Tells every process (the verifiers' streams) that a key changed state without a write (its quota reached). */
    announce: (keyId: number, orderId: number): void => {
      channel.publish([refToken(keyId, orderId)]);
    },
    /** Tells the other processes that ingested events changed these orders' meter quantities (check/meter-sync.ts). */
    metersChanged: (orderIds: readonly number[]): void => {
      if (orderIds.length > 0) channel.publish(orderIds.map(metersToken));
    },
    /** Hears the other processes' `metersChanged` (once listening: after the first lookup that reached the database). */
    onMetersChanged: (listener: MetersChangeListener): void => {
      channel.onMetersChanged = listener;
    },
    /** Tells the other processes that these clients' prepaid balances were drawn from (check/credit-sync.ts). */
    creditChanged: (clientIds: readonly number[]): void => {
      if (clientIds.length > 0) channel.publish(clientIds.map(creditToken));
    },
    /** Hears the other processes' `creditChanged` (once listening). */
    onCreditChanged: (listener: CreditChangeListener): void => {
      channel.onCreditChanged = listener;
    },
    /** The verifiers' events stream: every key change from any process (starts listening on first use). */
    keyEvents: (): KeyEventHub => {
      listen();
      return keyEvents;
    },
    /** Ends the open events streams (first on shutdown: before the counts are flushed). */
    closeStreams: (): void => {
      keyEvents.close();
    },
    /** Stops hearing and telling the other processes (last on shutdown). */
    close: (): Promise<void> => {
      return channel.close();
    },
  };
}

export type KeySync = ReturnType<typeof createKeySync>;
