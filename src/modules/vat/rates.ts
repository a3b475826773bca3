// The member states' VAT rates (issue 26 item 2): the only writer of `vat_rates`. Shipped with the standard rates
// (migration 051, lib/eu-vat.ts) and edited by staff when a state changes its rate; invoices already issued keep
// the rate they were issued with. There is one row per member state, always: rates are changed, never added or
// removed.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { errors } from '../../platform/errors.ts';
import { EU_STANDARD_RATES } from '../../lib/eu-vat.ts';
import { formatRate, parseRate } from '../../lib/rates.ts';
import { isoSeconds } from '../../lib/time.ts';
import { isEuMemberState } from '../../lib/vat-numbers.ts';
import { countryNames } from '../system/countries.ts';

export interface VatRateRecord {
  country: string;
  name: string;
  /** Percent as a decimal string ("19", "25.5"). */
  rate: string;
  /** The shipped standard rate, for staff to compare. */
  standard_rate: string;
  updated_at: string;
}

export function createVatRates({ db }: { db: Kysely<Database> }) {
  return {
    async list(): Promise<VatRateRecord[]> {
      const rows = await db.selectFrom('vat_rates').selectAll().orderBy('country').execute();
      return rows.map((row) => ({
        country: row.country,
        name: countryNames()[row.country] ?? row.country,
        rate: formatRate(row.rate),
        standard_rate: formatRate(EU_STANDARD_RATES[row.country] ?? 0),
        updated_at: row.updated_at,
      }));
    },

    /** admin/vat/rate_update: 422 for a country that is not a member state or a rate out of 0–100. */
    async update(country: string, rate: string | number, now = new Date()): Promise<void> {
      const code = country.trim().toUpperCase();
      if (!isEuMemberState(code)) throw errors.invalid('country', 'must be an EU member state (ISO 3166-1 alpha-2)');
      const value = parseRate(rate, 'rate');
      await db.updateTable('vat_rates').set({ rate: value, updated_at: isoSeconds(now) }).where('country', '=', code).execute();
    },

    /** A member state's rate in thousandths of a percent, read in the sale's transaction. */
    async ratesIn(trx: Kysely<Database>): Promise<Map<string, number>> {
      const rows = await trx.selectFrom('vat_rates').select(['country', 'rate']).execute();
      return new Map(rows.map((row) => [row.country, row.rate]));
    },
  };
}

export type VatRates = ReturnType<typeof createVatRates>;
