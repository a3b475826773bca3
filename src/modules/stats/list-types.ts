// The lists behind the dashboard's figures (admin/stats/dashboard_list and the CSV exports): each names its columns
// and reads one page of rows for a range. Rows are flat (column → text, number or null), so one table view and one
// CSV writer serve every figure.
import type { Kysely } from 'kysely';
import type { DialectName } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { formatMoney } from '../../lib/money.ts';
import { precisionOf } from '../../lib/currency.ts';
import type { DefaultCurrency, StatsSelling } from './convert.ts';
import type { Bounds } from './range.ts';
import type { StoredRate } from '../currency/selling.ts';

export type Cell = string | number | null;
/** A count or sum as a driver returns it: a number on SQLite, a string (bigint, numeric) on PostgreSQL. */
export type DbNumber = number | string | bigint;
export type Row = Record<string, Cell>;

export interface ListContext {
  db: Kysely<Database>;
  dialect: DialectName;
  selling: StatsSelling;
  /** The default currency and its conversions, read once per list or export. */
  into: DefaultCurrency;
  range: Bounds;
  /** Now, as a stored moment. */
  now: string;
}

export interface FigureList {
  columns: readonly string[];
  /** One page of rows (`limit` from `offset`, in a stable order) and how many rows there are in all. */
  read(context: ListContext, offset: number, limit: number): Promise<{ rows: Row[]; total: number }>;
}

/** Minor units of `currency` as its decimal string. */
export const amountOf = (minor: number | string | bigint | null, currency: string): string => formatMoney(Number(minor ?? 0), precisionOf(currency));

/** "First Last", or the first name alone. */
export const nameOf = (first: string | null, last: string | null): string => [first, last].filter((part) => part !== null && part !== '').join(' ');

/** A row's `default_currency` and its amount in it at the invoice's stored rate, under `column`. */
export function inDefault(into: DefaultCurrency, column: string, amount: number, stored: StoredRate): Row {
  return { default_currency: into.code, [column]: amountOf(into.atStoredRate(amount, stored), into.code) };
}
