// The instance's currencies (issue 26, FOSSBilling's Currency module): one default, the others with a rate against it
// set by staff. Every rate set is also written to `currency_rates` with its moment and the default it was against, so
// an invoice can name the rate it used and a report can convert at it later.
//
// Every change runs under one lock (PostgreSQL: an advisory transaction lock; SQLite: its single writer, taken by a
// first write), so two staff members changing currencies at once run one after the other and each sees the other's
// result; code that starts using a currency (an invoice in it) takes the same lock shared (`useCurrency`), so a
// currency cannot be deleted between "it exists" and the row that uses it.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { DialectName } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { errors } from '../../platform/errors.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { nowIso } from '../../lib/time.ts';
import { isoCurrencies, isoCurrency } from '../../lib/iso-4217.ts';
import { divideRates, parseExchangeRate } from '../../lib/exchange.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { describeCode, toRecord, type CurrencyRecord } from './records.ts';
import { settingsOf, type CurrencySettings } from './settings-input.ts';

export type { CurrencyRecord } from './records.ts';

export interface CurrencyServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
}

/** A rate as it was set: the row an invoice can point at. */
export interface RateRecord {
  id: number;
  code: string;
  rate: string;
  /** The default currency the rate was against when it was set. */
  base_code: string;
  staff_id: number | null;
  created_at: string;
}

export interface CreateCurrencyInput extends CurrencySettings {
  code: string;
  conversion_rate: string | number;
}

export interface UpdateCurrencyInput extends CurrencySettings {
  code: string;
  conversion_rate?: string | number | undefined;
}

// Any constant shared by every Tollgate process on the database; "tollgate currencies" in a 32-bit number.
const LOCK_KEY = 0x7c_cc_26;

/** A currency code as the API takes it: three letters, any case. */
export function normaliseCode(code: string, param = 'code'): string {
  const trimmed = code.trim();
  if (!/^[A-Za-z]{3}$/.test(trimmed)) throw errors.invalid(param, 'must be a three-letter ISO 4217 currency code such as "EUR"');
  return trimmed.toUpperCase();
}

export type CurrencyService = ReturnType<typeof createCurrencyService>;

/**
 * The default currency the database holds, or undefined before the first start has seeded one. Read before the
 * services are built (bootstrap.ts), so a process formats amounts in the default staff chose with set_default, not in
 * the `CURRENCY` setting, which only names the first default.
 */
export async function storedDefaultCode(db: Kysely<Database>): Promise<string | undefined> {
  const row = await db.selectFrom('currencies').select('code').where('is_default', '=', 1).executeTakeFirst();
  return row?.code;
}

export function createCurrencyService({ db, dialect }: CurrencyServiceDeps) {
  /** The exclusive lock every change takes first (see the top of this file). */
  async function lockForChange(trx: Kysely<Database>): Promise<void> {
    if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
    // A write that changes nothing still takes SQLite's write lock, so what follows reads the latest state.
    else await sql`update currencies set id = id where 0 = 1`.execute(trx);
  }

  const rowOf = (q: Kysely<Database>, code: string) => q.selectFrom('currencies').selectAll().where('code', '=', code).executeTakeFirst();
  const defaultRowOf = (q: Kysely<Database>) => q.selectFrom('currencies').selectAll().where('is_default', '=', 1).executeTakeFirst();

  async function found(q: Kysely<Database>, code: string) {
    const row = await rowOf(q, normaliseCode(code));
    if (row === undefined) throw errors.notFound('Currency');
    return row;
  }

  async function defaultOf(q: Kysely<Database>) {
    const row = await defaultRowOf(q);
    // Only before the start-up seed has run (a database migrated by hand and never served).
    if (row === undefined) throw errors.notFound('Default currency');
    return row;
  }

  async function recordRate(trx: Kysely<Database>, code: string, rate: string, baseCode: string, staffId: number | null, at: string): Promise<void> {
    await trx.insertInto('currency_rates').values({ code, rate, base_code: baseCode, staff_id: staffId, created_at: at }).execute();
  }

  /** What uses a currency, named for the 409, or null: clients, orders, invoices, transactions and the credit ledger. */
  async function usedBy(trx: Kysely<Database>, code: string): Promise<string | null> {
    // Reads of neighbours' tables, never writes: a delete must see every row in the currency, whoever wrote it.
    if (await trx.selectFrom('clients').select('id').where('currency', '=', code).limit(1).executeTakeFirst()) return 'clients';
    if (await trx.selectFrom('orders').select('id').where('currency', '=', code).limit(1).executeTakeFirst()) return 'orders';
    if (await trx.selectFrom('invoices').select('id').where('currency', '=', code).limit(1).executeTakeFirst()) return 'invoices';
    if (await trx.selectFrom('transactions').select('id').where('currency', '=', code).limit(1).executeTakeFirst()) return 'transactions';
    if (await trx.selectFrom('credit_entries').select('id').where('currency', '=', code).limit(1).executeTakeFirst()) return 'credit balances';
    return null;
  }

  function rateFor(value: string | number, param: string): string {
    return parseExchangeRate(value, param);
  }

  return {
    /**
     * Makes `code` (the CURRENCY setting) the default currency when there is none yet: at the first start after
     * migration 038, so an existing instance keeps its currency. Later starts change nothing, whatever CURRENCY says.
     */
    async seedDefault(code: string): Promise<void> {
      const upper = code.toUpperCase();
      await inTransaction(db, async (trx) => {
        await lockForChange(trx);
        if ((await defaultRowOf(trx)) !== undefined) return;
        const now = nowIso();
        if ((await rowOf(trx, upper)) === undefined) {
          await trx
            .insertInto('currencies')
            .values({ code: upper, is_default: 1, conversion_rate: '1', is_rate_manual: 0, format_pattern: null, fraction_digits: null, rounding_step: null, rounding_ending: null, rate_updated_at: now, created_at: now, updated_at: now })
            .execute();
        } else {
          await trx.updateTable('currencies').set({ is_default: 1, conversion_rate: '1', is_rate_manual: 0, rate_updated_at: now, updated_at: now }).where('code', '=', upper).execute();
        }
        await recordRate(trx, upper, '1', upper, null, now);
      });
    },

    /** The currencies, by code, optionally those whose code contains `search` (FOSSBilling's filter). */
    async list(params: { search?: string | undefined; page?: number | undefined; per_page?: number | undefined }): Promise<Page<CurrencyRecord>> {
      const request = pageRequest(params);
      const search = (params.search ?? '').trim().toUpperCase();
      let query = db.selectFrom('currencies');
      // A code is three letters: any other character in the search matches nothing, and needs no escaping.
      if (search !== '') query = /^[A-Z]{1,3}$/.test(search) ? query.where('code', 'like', `%${search}%`) : query.where(sql<boolean>`1 = 0`);
      const total = Number((await query.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow()).n);
      const rows = await query.selectAll().orderBy('code').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total, rows.map(toRecord));
    },

    /** The instance's currencies as {code: name} (guest/currency/get_pairs). */
    async pairs(): Promise<Record<string, string>> {
      const rows = await db.selectFrom('currencies').select('code').orderBy('code').execute();
      return Object.fromEntries(rows.map(({ code }) => [code, describeCode(code).name]));
    },

    /** Every currency that can be added, as {code: "CODE (Name)"} (admin/currency/get_pairs). */
    isoPairs(): Record<string, string> {
      return Object.fromEntries(isoCurrencies().map(({ code, name }) => [code, `${code} (${name})`]));
    },

    async get(code: string): Promise<CurrencyRecord> {
      return toRecord(await found(db, code));
    },

    async getDefault(): Promise<CurrencyRecord> {
      return toRecord(await defaultOf(db));
    },

    /** Adds a currency with its first rate; returns its code. 422 for a code ISO 4217 lacks, 409 when present. */
    async create(input: CreateCurrencyInput, staffId: number | null): Promise<string> {
      const code = normaliseCode(input.code);
      const iso = isoCurrency(code);
      if (iso === undefined) throw errors.invalid('code', `"${code}" is not a current ISO 4217 currency code`);
      const rate = rateFor(input.conversion_rate, 'conversion_rate');
      const settings = settingsOf(input, iso.minorUnit);
      try {
        await inTransaction(db, async (trx) => {
          await lockForChange(trx);
          if ((await rowOf(trx, code)) !== undefined) throw errors.conflict(`Currency ${code} already exists`);
          const base = await defaultOf(trx);
          const now = nowIso();
          await trx
            .insertInto('currencies')
            .values({
              code,
              is_default: 0,
              conversion_rate: rate,
              is_rate_manual: settings.is_rate_manual === true ? 1 : 0,
              format_pattern: settings.format_pattern ?? null,
              fraction_digits: settings.fraction_digits ?? null,
              rounding_step: settings.rounding?.step ?? null,
              rounding_ending: settings.rounding?.ending ?? null,
              rate_updated_at: now,
              created_at: now,
              updated_at: now,
            })
            .execute();
          await recordRate(trx, code, rate, base.code, staffId, now);
        });
      } catch (error) {
        // The lock serialises Tollgate's own writers; the unique index still answers anyone else's insert.
        if (isUniqueViolation(error)) throw errors.conflict(`Currency ${code} already exists`);
        throw error;
      }
      return code;
    },

    /** Changes a currency's rate (written to the history), display settings or price rounding. */
    async update(input: UpdateCurrencyInput, staffId: number | null): Promise<true> {
      return inTransaction(db, async (trx) => {
        await lockForChange(trx);
        const row = await found(trx, input.code);
        const settings = settingsOf(input, describeCode(row.code).minorUnit);
        const rate = input.conversion_rate === undefined ? undefined : rateFor(input.conversion_rate, 'conversion_rate');
        if (row.is_default === 1 && rate !== undefined && rate !== '1') {
          throw errors.invalid('conversion_rate', 'must be 1 for the default currency: the other rates are against it');
        }
        if (row.is_default === 1 && settings.is_rate_manual === true) {
          throw errors.invalid('is_rate_manual', 'cannot be set on the default currency');
        }
        const now = nowIso();
        await trx
          .updateTable('currencies')
          .set({
            ...(rate !== undefined && { conversion_rate: rate, rate_updated_at: now }),
            ...(settings.is_rate_manual !== undefined && { is_rate_manual: settings.is_rate_manual ? 1 : 0 }),
            ...(settings.format_pattern !== undefined && { format_pattern: settings.format_pattern }),
            ...(settings.fraction_digits !== undefined && { fraction_digits: settings.fraction_digits }),
            ...(settings.rounding !== undefined && { rounding_step: settings.rounding?.step ?? null, rounding_ending: settings.rounding?.ending ?? null }),
            updated_at: now,
          })
          .where('id', '=', row.id)
          .execute();
        if (rate !== undefined) await recordRate(trx, row.code, rate, (await defaultOf(trx)).code, staffId, now);
        return true as const;
      });
    },

    /** Sets several rates at once, all or none (admin/currency/update_rates {rates}). */
    async updateRates(rates: Record<string, string | number>, staffId: number | null): Promise<true> {
      return inTransaction(db, async (trx) => {
        await lockForChange(trx);
        const base = await defaultOf(trx);
        const changes: Array<{ id: number; code: string; rate: string }> = [];
        for (const [given, value] of Object.entries(rates)) {
          const code = normaliseCode(given, `rates.${given}`);
          const rate = rateFor(value, `rates.${given}`);
          const row = await rowOf(trx, code);
          if (row === undefined) throw errors.notFound(`Currency ${code}`);
          if (row.is_default === 1 && rate !== '1') throw errors.invalid(`rates.${given}`, 'must be 1 for the default currency');
          changes.push({ id: row.id, code, rate });
        }
        const now = nowIso();
        for (const change of changes) {
          await trx.updateTable('currencies').set({ conversion_rate: change.rate, rate_updated_at: now, updated_at: now }).where('id', '=', change.id).execute();
          await recordRate(trx, change.code, change.rate, base.code, staffId, now);
        }
        return true as const;
      });
    },

    /**
     * Makes `code` the default. Every rate is restated against it (old rate ÷ the new default's old rate, to 12
     * decimals), so the cross rates staff set stay as they were; the restated rates enter the history.
     */
    async setDefault(code: string, staffId: number | null): Promise<true> {
      return inTransaction(db, async (trx) => {
        await lockForChange(trx);
        const target = await found(trx, code);
        if (target.is_default === 1) return true as const;
        const rows = await trx.selectFrom('currencies').selectAll().execute();
        const restated = rows.map((row) => ({ row, rate: row.id === target.id ? '1' : divideRates(row.conversion_rate, target.conversion_rate, 'conversion_rate') }));
        const now = nowIso();
        // Clear first, then set: the partial unique index allows one default at a time, and the lock makes it ours.
        await trx.updateTable('currencies').set({ is_default: 0, updated_at: now }).where('is_default', '=', 1).execute();
        for (const { row, rate } of restated) {
          const isTarget = row.id === target.id;
          await trx
            .updateTable('currencies')
            .set({ conversion_rate: rate, rate_updated_at: now, updated_at: now, ...(isTarget && { is_default: 1, is_rate_manual: 0 }) })
            .where('id', '=', row.id)
            .execute();
          await recordRate(trx, row.code, rate, target.code, staffId, now);
        }
        return true as const;
      });
    },

    /** Removes a currency: never the default (409), never one in use by a client, order, invoice or balance (409). */
    async delete(code: string): Promise<true> {
      return inTransaction(db, async (trx) => {
        await lockForChange(trx);
        const row = await found(trx, code);
        if (row.is_default === 1) throw errors.conflict('The default currency cannot be deleted; make another currency the default first');
        const user = await usedBy(trx, row.code);
        if (user !== null) throw errors.conflict(`Currency ${row.code} is in use by ${user} and cannot be deleted`);
        await trx.deleteFrom('currencies').where('id', '=', row.id).execute();
        // The rate history stays: invoices and reports may still name those rates.
        return true as const;
      });
    },

    /** The rates a currency has had, newest first. */
    async rates(code: string, params: { page?: number | undefined; per_page?: number | undefined }): Promise<Page<RateRecord>> {
      const upper = normaliseCode(code);
      const request = pageRequest(params);
      const query = db.selectFrom('currency_rates').where('code', '=', upper);
      const total = Number((await query.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow()).n);
      if (total === 0 && (await rowOf(db, upper)) === undefined) throw errors.notFound('Currency');
      const list = await query.selectAll().orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total, list);
    },

    /**
     * The rate of `code` in force at `at` (now by default): the last one set at or before it, or null when none was
     * (the currency did not exist yet). For invoices that store the rate they used, and reports at stored rates.
     */
    async rateAt(code: string, at: string = nowIso(), q: Kysely<Database> = db): Promise<RateRecord | null> {
      const row = await q.selectFrom('currency_rates').selectAll().where('code', '=', code.toUpperCase()).where('created_at', '<=', at).orderBy('id', 'desc').limit(1).executeTakeFirst();
      return row ?? null;
    },

    /**
     * Inside the transaction that starts using a currency (the next piece: a client's first order, an invoice in it):
     * takes the currencies' lock shared and answers the currency, or 404 if it is not (or no longer) there. A delete
     * waits for that transaction, then sees its rows; a use after a delete finds no currency.
     */
    async useCurrency(trx: Kysely<Database>, code: string): Promise<CurrencyRecord> {
      if (dialect === 'postgres') await sql`select pg_advisory_xact_lock_shared(${LOCK_KEY})`.execute(trx);
      else await sql`update currencies set id = id where 0 = 1`.execute(trx);
      return toRecord(await found(trx, code));
    },
  };
}
