// The ledger's writes and sums (issue 24). Every write runs inside the caller's transaction after `lockAccount`, so the
// writers of one balance take turns (PostgreSQL: the account row's lock; SQLite: its single writer). A credit is an
// entry with a positive amount (a "lot"); a debit is a negative entry plus the allocations that say which lots it
// took from (burn-down.ts), which is how an expiry knows what is left of a grant. A write names its source with an
// idempotency key: the same key again writes nothing and answers the entry that is there.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { databaseOf } from '../../platform/transaction.ts';
import { isoSeconds } from '../../lib/time.ts';
import { allocate, type Lot } from './burn-down.ts';
import type { CreditKind } from './tables.ts';

export interface Account {
  clientId: number;
  currency: string;
}

export interface EntryInput {
  kind: CreditKind;
  /** Minor units, more than 0: the entry is written positive for a credit, negative for a debit. */
  amount: number;
  key: string;
  invoiceId?: number | null;
  staffId?: number | null;
  note?: string | null;
  /** Grants: when what is left of them expires. */
  expiresAt?: string | null;
  reversesId?: number | null;
}

/** The entry a write made, or found under its key (`duplicate`). */
export interface Written {
  id: number;
  duplicate: boolean;
}

/**
 * Told of every debit and expiry in the transaction that wrote it, under the account's lock, with the balance before
 * and after: auto-recharge and the low-balance alert count their crossings there (watches.ts), whoever wrote the debit.
 */
export type DebitWatcher = (trx: Kysely<Database>, account: Account, before: number, after: number, now: Date) => Promise<void>;

// One watcher per database handle (the app's services register theirs); a transaction finds it through its handle.
const watchers = new WeakMap<Kysely<Database>, DebitWatcher>();

export function watchDebits(db: Kysely<Database>, watcher: DebitWatcher): void {
  watchers.set(db, watcher);
}

async function debited(trx: Kysely<Database>, account: Account, amount: number, now: Date): Promise<void> {
  const watcher = watchers.get(databaseOf(trx));
  if (watcher === undefined) return;
  const after = await balanceOf(trx, account);
  await watcher(trx, account, after + amount, after, now);
}

const sumOf = (value: string | number | null | undefined): number => Number(value ?? 0);

/** Takes the account's lock until `trx` ends, creating the account row on first use. */
export async function lockAccount(trx: Kysely<Database>, account: Account, now: Date): Promise<void> {
  const stamp = isoSeconds(now);
  await trx
    .insertInto('credit_accounts')
    .values({ client_id: account.clientId, currency: account.currency, created_at: stamp, locked_at: null })
    .onConflict((oc) => oc.columns(['client_id', 'currency']).doNothing())
    .execute();
  await trx.updateTable('credit_accounts').set({ locked_at: stamp }).where('client_id', '=', account.clientId).where('currency', '=', account.currency).execute();
}

/** The balance: the sum of the account's entries. */
export async function balanceOf(db: Kysely<Database>, account: Account): Promise<number> {
  const row = await db
    .selectFrom('credit_entries')
    .select(sql<string | number | null>`sum(amount)`.as('total'))
    .where('client_id', '=', account.clientId)
    .where('currency', '=', account.currency)
    .executeTakeFirst();
  return sumOf(row?.total);
}

/** The account's credits with something left, lapsed grants included (`expiresAt` tells). */
export async function openLots(trx: Kysely<Database>, account: Account): Promise<Lot[]> {
  const rows = await trx
    .selectFrom('credit_entries as e')
    .leftJoin('credit_allocations as a', 'a.lot_id', 'e.id')
    .select(['e.id', 'e.amount', 'e.promotional', 'e.expires_at', sql<string | number | null>`sum(a.amount)`.as('taken')])
    .where('e.client_id', '=', account.clientId)
    .where('e.currency', '=', account.currency)
    .where('e.amount', '>', 0)
    .groupBy(['e.id', 'e.amount', 'e.promotional', 'e.expires_at'])
    .execute();
  return rows
    .map((row) => ({ id: row.id, remaining: row.amount - sumOf(row.taken), promotional: row.promotional === 1, expiresAt: row.expires_at }))
    .filter((lot) => lot.remaining > 0);
}

async function existing(trx: Kysely<Database>, key: string): Promise<Written | null> {
  const row = await trx.selectFrom('credit_entries').select('id').where('idempotency_key', '=', key).executeTakeFirst();
  return row === undefined ? null : { id: row.id, duplicate: true };
}

async function insert(trx: Kysely<Database>, account: Account, input: EntryInput, signed: number, now: Date): Promise<number> {
  const row = await trx
    .insertInto('credit_entries')
    .values({
      client_id: account.clientId,
      currency: account.currency,
      kind: input.kind,
      amount: signed,
      promotional: input.kind === 'grant' ? 1 : 0,
      expires_at: input.expiresAt ?? null,
      idempotency_key: input.key,
      invoice_id: input.invoiceId ?? null,
      staff_id: input.staffId ?? null,
      note: input.note === null || input.note === undefined ? null : input.note.slice(0, 255),
      reverses_id: input.reversesId ?? null,
      created_at: isoSeconds(now),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

function checkAmount(amount: number): void {
  if (!Number.isSafeInteger(amount) || amount <= 0) throw new Error(`A ledger amount must be a positive whole number of minor units, not ${amount}`);
}

/** The account's debits not fully allocated (prepaid usage drawn past the balance, `debit` with `debt`), oldest first. */
async function debts(trx: Kysely<Database>, account: Account): Promise<Array<{ id: number; owed: number }>> {
  const rows = await trx
    .selectFrom('credit_entries as e')
    .leftJoin('credit_allocations as a', 'a.debit_id', 'e.id')
    .select(['e.id', 'e.amount', sql<string | number | null>`sum(a.amount)`.as('allocated')])
    .where('e.client_id', '=', account.clientId)
    .where('e.currency', '=', account.currency)
    .where('e.kind', '=', 'consume')
    .groupBy(['e.id', 'e.amount'])
    .having((eb) => eb(eb.neg('e.amount'), '>', eb.fn.coalesce(eb.fn.sum<number>('a.amount'), eb.lit(0))))
    .orderBy('e.id')
    .execute();
  return rows.map((row) => ({ id: row.id, owed: -row.amount - sumOf(row.allocated) }));
}

/** Writes a credit (a new lot); what the account owes (debt, below zero) is paid from it first. The caller holds the account's lock. */
export async function credit(trx: Kysely<Database>, account: Account, input: EntryInput, now: Date): Promise<Written> {
  checkAmount(input.amount);
  const found = await existing(trx, input.key);
  if (found !== null) return found;
  const id = await insert(trx, account, input, input.amount, now);
  // A balance below zero owes its debts: the new credit is allocated to them at once, so a lot's remainder stays
  // "what is left of it" and an expiring grant that paid a debt has nothing left to expire.
  let left = input.amount;
  for (const debt of await debts(trx, account)) {
    if (left === 0) break;
    const take = Math.min(left, debt.owed);
    await trx.insertInto('credit_allocations').values({ debit_id: debt.id, lot_id: id, amount: take }).execute();
    left -= take;
  }
  return { id, duplicate: false };
}

/** A debit the balance could not cover: nothing was written. */
export interface Uncovered {
  available: number;
}

/**
 * Writes a debit taken from the open lots in burn-down order (`first` before the rest). Grants past their expiry are
 * not spent (the expiry pass takes what is left of them). When the spendable credit does not cover it nothing is
 * written and the answer says what is available: a balance never goes below zero. The caller holds the account's lock.
 */
export async function debit(trx: Kysely<Database>, account: Account, input: EntryInput, now: Date, first?: number): Promise<Written | Uncovered> {
  checkAmount(input.amount);
  const found = await existing(trx, input.key);
  if (found !== null) return found;
  const at = isoSeconds(now);
  const lots = (await openLots(trx, account)).filter((lot) => lot.expiresAt === null || lot.expiresAt > at);
  const plan = allocate(lots, input.amount, first);
  if (plan === null) return { available: lots.reduce((sum, lot) => sum + lot.remaining, 0) };
  const id = await insert(trx, account, input, -input.amount, now);
  await trx
    .insertInto('credit_allocations')
    .values(plan.map((part) => ({ debit_id: id, lot_id: part.lotId, amount: part.amount })))
    .execute();
  await debited(trx, account, input.amount, now);
  return { id, duplicate: false };
}

/** Writes an `expire` entry for what is left of each of the account's grants past their expiry; returns how many. */
export async function expireLapsed(trx: Kysely<Database>, account: Account, now: Date): Promise<number> {
  const at = isoSeconds(now);
  let written = 0;
  let taken = 0;
  for (const lot of await openLots(trx, account)) {
    if (lot.expiresAt === null || lot.expiresAt > at) continue;
    const key = `expire:${lot.id}`;
    if ((await existing(trx, key)) !== null) continue;
    const id = await insert(trx, account, { kind: 'expire', amount: lot.remaining, key, note: `Unused credit of entry #${lot.id} expired` }, -lot.remaining, now);
    await trx.insertInto('credit_allocations').values({ debit_id: id, lot_id: lot.id, amount: lot.remaining }).execute();
    written += 1;
    taken += lot.remaining;
  }
  if (taken > 0) await debited(trx, account, taken, now);
  return written;
}

/**
 * Prepaid usage (issue 24 item 2): a `consume` debit written in full even when the spendable credit does not cover it —
 * the usage has happened. What the lots cover is allocated; the rest is debt (the balance goes below zero), paid by the
 * next credits (`credit`). How far below zero a prepaid plan may go is its `allow_negative`, enforced by the check.
 * The caller holds the account's lock.
 */
export async function debitWithDebt(trx: Kysely<Database>, account: Account, input: EntryInput, now: Date): Promise<Written> {
  checkAmount(input.amount);
  const found = await existing(trx, input.key);
  if (found !== null) return found;
  const at = isoSeconds(now);
  const lots = (await openLots(trx, account)).filter((lot) => lot.expiresAt === null || lot.expiresAt > at);
  const spendable = lots.reduce((sum, lot) => sum + lot.remaining, 0);
  const covered = Math.min(spendable, input.amount);
  const plan = covered === 0 ? [] : (allocate(lots, covered) ?? []);
  const id = await insert(trx, account, input, -input.amount, now);
  if (plan.length > 0) await trx.insertInto('credit_allocations').values(plan.map((part) => ({ debit_id: id, lot_id: part.lotId, amount: part.amount }))).execute();
  // Usage crosses thresholds like any debit: auto-recharge and the low-balance alert count it (watches.ts).
  await debited(trx, account, input.amount, now);
  return { id, duplicate: false };
}

export const isUncovered = (result: Written | Uncovered): result is Uncovered => 'available' in result;
