// Customers won and lost, and payments that failed and were recovered, in a range: grouped counts in SQL (read only).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { sumAtStoredRates, type DefaultCurrency } from './convert.ts';
import type { Bounds } from './range.ts';
import type { DbNumber } from './list-types.ts';

/** Clients who signed up in the range. */
export async function newCustomers(db: Kysely<Database>, range: Bounds): Promise<number> {
  const row = await db
    .selectFrom('clients')
    .select((eb) => eb.fn.countAll<DbNumber>().as('n'))
    .where('created_at', '>=', range.start)
    .where('created_at', '<', range.end)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Clients lost in the range: an order of theirs was canceled in it, and at the range's end none of their orders was
 * running (activated before the end and not canceled by then). A client who canceled one plan and kept another is not
 * churned; one who left and came back within the range is not either.
 */
/** The canceled orders of clients lost in the range (see churnedCustomers), for the count and the list. */
export function churnedQuery(db: Kysely<Database>, range: Bounds) {
  return db
    .selectFrom('orders as lost')
    .where('lost.canceled_at', '>=', range.start)
    .where('lost.canceled_at', '<', range.end)
    // An order canceled before it ever ran (never paid) lost no customer.
    .where('lost.activated_at', 'is not', null)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('orders as kept')
            .select('kept.id')
            .whereRef('kept.client_id', '=', 'lost.client_id')
            .where('kept.activated_at', 'is not', null)
            .where('kept.activated_at', '<', range.end)
            .where((inner) => inner.or([inner('kept.canceled_at', 'is', null), inner('kept.canceled_at', '>=', range.end)])),
        ),
      ),
    );
}

/**
 * Clients lost in the range: an order of theirs was canceled in it, and at the range's end none of their orders was
 * running (activated before the end and not canceled by then). A client who canceled one plan and kept another is not
 * churned; one who left and came back within the range is not either.
 */
export async function churnedCustomers(db: Kysely<Database>, range: Bounds): Promise<number> {
  const row = await churnedQuery(db, range)
    .select((eb) => eb.fn.count<DbNumber>('lost.client_id').distinct().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface FailedPayments {
  /** Invoices with at least one failed payment in the range. */
  failed: number;
  /** Of those, the ones paid since. */
  recovered: number;
  /** Per currency: what the failed invoices were for, and what of it was recovered (minor units). */
  amounts: Array<{ currency: string; failed: number; recovered: number }>;
  /** The same in the default currency, at the invoices' stored rates. */
  total: { failed: number; recovered: number };
}

/** Failed payments in the range, counted per invoice (three declines of one invoice are one failed payment). */
export async function failedPayments(db: Kysely<Database>, range: Bounds, into: DefaultCurrency): Promise<FailedPayments> {
  const rows = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('transactions')
        .select('invoice_id')
        .where('type', '=', 'payment')
        .where('status', '=', 'failed')
        .where('created_at', '>=', range.start)
        .where('created_at', '<', range.end)
        .groupBy('invoice_id')
        .as('failures'),
    )
    .innerJoin('invoices', 'invoices.id', 'failures.invoice_id')
    .select((eb) => [
      'invoices.currency as currency',
      'invoices.currency_rate as currency_rate',
      'invoices.currency_base as currency_base',
      eb.fn.countAll<DbNumber>().as('failed'),
      eb.fn.sum<DbNumber>('invoices.total').as('failed_amount'),
      eb.fn.sum<DbNumber>(eb.case().when('invoices.status', 'in', ['paid', 'refunded']).then(1).else(0).end()).as('recovered'),
      eb.fn.sum<DbNumber>(eb.case().when('invoices.status', 'in', ['paid', 'refunded']).then(eb.ref('invoices.total')).else(0).end()).as('recovered_amount'),
    ])
    .groupBy(['invoices.currency', 'invoices.currency_rate', 'invoices.currency_base'])
    .execute();
  const perCurrency = new Map<string, { currency: string; failed: number; recovered: number }>();
  for (const row of rows) {
    const entry = perCurrency.get(row.currency) ?? { currency: row.currency, failed: 0, recovered: 0 };
    entry.failed += Number(row.failed_amount ?? 0);
    entry.recovered += Number(row.recovered_amount ?? 0);
    perCurrency.set(row.currency, entry);
  }
  return {
    failed: rows.reduce((sum, row) => sum + Number(row.failed), 0),
    recovered: rows.reduce((sum, row) => sum + Number(row.recovered ?? 0), 0),
    amounts: [...perCurrency.values()].toSorted((a, b) => a.currency.localeCompare(b.currency)),
    total: {
      failed: sumAtStoredRates(rows, (row) => Number(row.failed_amount ?? 0), into),
      recovered: sumAtStoredRates(rows, (row) => Number(row.recovered_amount ?? 0), into),
    },
  };
}
