// Which currency a sale is in, and at what rate (issue 26 item 6). A client's currency is the `currency` of their
// record; it may change until their first sale (an order, an invoice or a wallet line) and is kept from then on, as
// FOSSBilling keeps it. Everything sold to the client — cart, orders, invoices, Stripe charges, overage, wallet — is
// in it; a sale with no client (a guest's cart) is in the currency the guest chose, else the default.
//
// `SaleCurrency` carries what pricing needs: the code and minor unit, the rate against the default and when it was set
// (stored on the invoice), and the staff-chosen rounding of converted prices.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { errors } from '../../platform/errors.ts';
import { convertMinor, convertMinorBack, convertPrice, type PriceRounding } from '../../lib/exchange.ts';
import { describeCode, roundingOf } from './records.ts';
import type { CurrencyService } from './service.ts';

export interface SaleCurrency {
  code: string;
  /** ISO 4217 decimals of `code`: what its amounts are counted in. */
  minorUnit: number;
  isDefault: boolean;
  /** Units of `code` per unit of the default currency ("1" for the default). */
  rate: string;
  /** When that rate was set. */
  rateAt: string;
  rounding: PriceRounding | null;
  defaultCode: string;
  defaultMinorUnit: number;
}

/** What an invoice stores of its currency: enough to convert its amounts back to the default it was issued in. */
export interface StoredRate {
  currency: string;
  currency_rate: string | null;
  currency_base: string | null;
}

export interface SellingDeps {
  db: Kysely<Database>;
  currencies: Pick<CurrencyService, 'useCurrency'>;
}

/** A price in the default currency in `sale`'s: converted at its rate, rounded to its minor unit, then by its rounding. */
export function priceIn(amount: number, sale: SaleCurrency): number {
  if (sale.isDefault) return amount;
  return convertPrice(amount, sale.rate, sale.defaultMinorUnit, sale.minorUnit, sale.rounding);
}

/** An amount in the default currency in `sale`'s at its rate, rounded once, without the price rounding (usage, fees). */
export function amountIn(amount: number, sale: SaleCurrency): number {
  if (sale.isDefault) return amount;
  return convertMinor(amount, sale.rate, sale.defaultMinorUnit, sale.minorUnit);
}

export type Selling = ReturnType<typeof createSelling>;

export function createSelling({ db, currencies }: SellingDeps) {
  async function defaultRow(q: Kysely<Database>) {
    const row = await q.selectFrom('currencies').selectAll().where('is_default', '=', 1).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Default currency');
    return row;
  }

  /** The sale currency `code` (any case; none: the default), or a 422 naming `param` when the instance lacks it. */
  async function describe(q: Kysely<Database>, code: string | null | undefined, param = 'currency'): Promise<SaleCurrency> {
    const base = await defaultRow(q);
    const upper = code === null || code === undefined ? base.code : code.trim().toUpperCase();
    const row = upper === base.code ? base : await q.selectFrom('currencies').selectAll().where('code', '=', upper).executeTakeFirst();
    if (row === undefined) throw errors.invalid(param, `"${code}" is not one of this shop's currencies (guest/currency/get_pairs lists them)`);
    return {
      code: row.code,
      minorUnit: describeCode(row.code).minorUnit,
      isDefault: row.is_default === 1,
      rate: row.conversion_rate,
      rateAt: row.rate_updated_at,
      rounding: roundingOf(row),
      defaultCode: base.code,
      defaultMinorUnit: describeCode(base.code).minorUnit,
    };
  }

  /** The client's currency code, or null when the record has none (then sales are in the default). */
  async function clientCode(q: Kysely<Database>, clientId: number): Promise<string | null> {
    const row = await q.selectFrom('clients').select('currency').where('id', '=', clientId).executeTakeFirst();
    return row?.currency ?? null;
  }

  /** The currency of the client's first sale, if they have one: from then on theirs is fixed. */
  async function soldIn(q: Kysely<Database>, clientId: number): Promise<string | null> {
    // Reads of neighbours' tables, never writes: any order, invoice or wallet line fixes the currency.
    const order = await q.selectFrom('orders').select('currency').where('client_id', '=', clientId).orderBy('id').limit(1).executeTakeFirst();
    if (order !== undefined) return order.currency;
    const invoice = await q.selectFrom('invoices').select('currency').where('client_id', '=', clientId).orderBy('id').limit(1).executeTakeFirst();
    if (invoice !== undefined) return invoice.currency;
    const entry = await q.selectFrom('credit_entries').select('currency').where('client_id', '=', clientId).orderBy('id').limit(1).executeTakeFirst();
    return entry?.currency ?? null;
  }

  return {
    describe,

    /** The default currency's code. */
    async defaultCode(q: Kysely<Database> = db): Promise<string> {
      return (await defaultRow(q)).code;
    },

    /** What a client buys in (the client's currency, else the default), read without a lock: for showing prices. */
    async forClient(q: Kysely<Database>, clientId: number): Promise<SaleCurrency> {
      const code = await clientCode(q, clientId);
      return describe(q, code);
    },

    /**
     * Inside the transaction of a sale (an order, an invoice): the client's currency, with the currencies' lock taken
     * shared (CurrencyService.useCurrency), so the currency cannot be deleted or its rate changed half-way.
     */
    async useForClient(trx: Kysely<Database>, clientId: number): Promise<SaleCurrency> {
      const code = (await clientCode(trx, clientId)) ?? (await defaultRow(trx)).code;
      await currencies.useCurrency(trx, code);
      return describe(trx, code);
    },

    /**
     * Checks a currency for a client's record (`clientId` null: a new client): it must be one of the instance's
     * (422 naming `currency`), and a client who has bought something keeps the currency they bought in (409).
     * Returns the code in upper case.
     */
    async checkClientCurrency(q: Kysely<Database>, clientId: number | null, code: string): Promise<string> {
      const sale = await describe(q, code);
      if (clientId === null) return sale.code;
      const fixed = await soldIn(q, clientId);
      if (fixed !== null && fixed !== sale.code) {
        throw errors.conflict(`The client's currency is ${fixed} since their first order and cannot be changed to ${sale.code}`);
      }
      return sale.code;
    },

    /** The currency a client's first sale fixed, or null before it. */
    soldIn,

    /**
     * The one conversion for reports at stored rates: loads the current currencies once and answers a function that
     * turns an amount of an invoice (or of its credit note or transaction) into minor units of the default currency
     * at the rate stored on that invoice, rounded half up once. An invoice issued against an older default is carried
     * from that default into today's at today's rate of the old default.
     */
    async storedRateConverter(q: Kysely<Database> = db): Promise<{ defaultCode: string; toDefault: (amount: number, invoice: StoredRate) => number }> {
      const rows = await q.selectFrom('currencies').select(['code', 'conversion_rate', 'is_default']).execute();
      const base = rows.find((row) => row.is_default === 1);
      if (base === undefined) throw errors.notFound('Default currency');
      const rates = new Map(rows.map((row) => [row.code, row.conversion_rate]));
      const defaultUnit = describeCode(base.code).minorUnit;
      return {
        defaultCode: base.code,
        toDefault(amount, invoice) {
          const rate = invoice.currency_rate ?? '1';
          const issuedBase = invoice.currency_base ?? invoice.currency;
          const issuedBaseUnit = describeCode(issuedBase).minorUnit;
          const inIssuedBase = convertMinorBack(amount, rate, describeCode(invoice.currency).minorUnit, issuedBaseUnit);
          if (issuedBase === base.code) return inIssuedBase;
          const today = rates.get(issuedBase);
          // The old default was deleted since: nothing to carry it with; its amount stands as it was.
          if (today === undefined) return convertMinor(inIssuedBase, '1', issuedBaseUnit, defaultUnit);
          return convertMinorBack(inIssuedBase, today, issuedBaseUnit, defaultUnit);
        },
      };
    },
  };
}
