// Transactions that can say when they are over. Work that must happen only after a change is visible to everyone
// (dropping a cache entry, telling other processes) registers with `afterTransaction(trx, …)`; `inTransaction` runs
// those callbacks once the transaction has committed or rolled back. Every service opens its transactions through
// `inTransaction`, so a product type hook deep inside an order change can rely on it.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';
import { deferToActionTransaction } from '../db/ambient.ts';

export type AfterTransaction = (committed: boolean) => void;

const pending = new WeakMap<Kysely<Database>, AfterTransaction[]>();
// Each open transaction's database handle, so code handed only a transaction can find what was set up for its database.
const roots = new WeakMap<Kysely<Database>, Kysely<Database>>();

export async function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const callbacks: AfterTransaction[] = [];
  let committed = false;
  try {
    const result = await db.transaction().execute((trx) => {
      pending.set(trx, callbacks);
      roots.set(trx, db);
      return work(trx);
    });
    committed = true;
    return result;
  } finally {
    // Inside a changing admin action (db/ambient.ts) this transaction is a savepoint of the action's one: what waits
    // for it to be visible waits for the action's commit instead (a rollback of this one is final at once).
    const deferred = committed && callbacks.length > 0 && deferToActionTransaction(db as Kysely<never>, (actionCommitted) => {
      for (const callback of callbacks) callback(actionCommitted);
    });
    if (!deferred) for (const callback of callbacks) callback(committed);
  }
}

/**
 * Runs `callback` when the transaction `trx` has ended. Outside a transaction opened by `inTransaction` (a plain
 * handle, whose statements commit one by one) it runs at once.
 */
export function afterTransaction(trx: Kysely<Database>, callback: AfterTransaction): void {
  const callbacks = pending.get(trx);
  if (callbacks !== undefined) callbacks.push(callback);
  else if (!deferToActionTransaction(trx as Kysely<never>, callback)) callback(true);
}

/** The database handle `trx` was opened on by `inTransaction` (a plain handle is its own). */
export function databaseOf(trx: Kysely<Database>): Kysely<Database> {
  return roots.get(trx) ?? trx;
}
