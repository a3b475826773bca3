// The One-Stop-Shop report (issue 26 item 3): net and VAT per country and rate of a quarter's consumer sales to other
// member states (invoices whose rule is `oss`), less the credit notes of that quarter against such invoices. Read-only.
//
// Which date puts a sale in a quarter: the payment's. Tollgate bills in advance, and for a payment made before the
// service is supplied VAT becomes chargeable when the payment is received (Directive 2006/112/EC, Article 65), so a
// paid invoice counts in the quarter of its `paid_at`; an unpaid or canceled one is not a supply yet and is left out.
// A credit note counts in the quarter it was issued in (Article 90: the taxable amount is reduced then), with the
// country and rate of its invoice. A VAT correction note (a number VIES confirmed after payment: the sale was a
// reverse charge all along) takes the invoice's whole net out as well as its tax. Amounts are per currency: the
// OSS return is in euros, and sales in another currency are converted at the ECB rate of the quarter's last day by
// whoever files it (the currency column says which rows need it).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { errors } from '../../platform/errors.ts';
import { formatMoney, precisionOf } from '../../lib/money.ts';
import { formatRate } from '../../lib/rates.ts';
import type { TaxEvidence } from './types.ts';

export interface OssQuarter {
  label: string;
  /** Inclusive start and exclusive end, ISO 8601 UTC. */
  from: string;
  to: string;
}

export interface OssLine {
  country: string;
  /** Percent as a decimal string. */
  rate: string;
  currency: string;
  net: string;
  vat: string;
  invoices: number;
  credit_notes: number;
}

export interface OssReport {
  quarter: string;
  from: string;
  to: string;
  lines: OssLine[];
}

/** "2026-Q4" → its first moment and the next quarter's; 422 naming `quarter` otherwise. */
export function parseQuarter(text: unknown): OssQuarter {
  const match = typeof text === 'string' ? /^(\d{4})-Q([1-4])$/.exec(text.trim().toUpperCase()) : null;
  if (match === null) throw errors.invalid('quarter', 'must be a quarter such as "2026-Q4"');
  const year = Number(match[1]);
  const quarter = Number(match[2]);
  if (year < 2021 || year > 9998) throw errors.invalid('quarter', 'must be a quarter from 2021-Q3 (when the One-Stop-Shop began) on');
  const start = (y: number, q: number): string => `${String(y).padStart(4, '0')}-${String((q - 1) * 3 + 1).padStart(2, '0')}-01T00:00:00Z`;
  return { label: `${year}-Q${quarter}`, from: start(year, quarter), to: quarter === 4 ? start(year + 1, 1) : start(year, quarter + 1) };
}

const num = (value: string | number | null): number => Number(value ?? 0);

export function createOssReport({ db }: { db: Kysely<Database> }) {
  return {
    async forQuarter(text: unknown): Promise<OssReport> {
      const quarter = parseQuarter(text);
      const sums = new Map<string, { country: string; rate: number; currency: string; net: number; vat: number; invoices: number; credit_notes: number }>();
      const lineOf = (country: string, rate: number, currency: string) => {
        const key = `${country}|${rate}|${currency}`;
        let line = sums.get(key);
        if (line === undefined) sums.set(key, (line = { country, rate, currency, net: 0, vat: 0, invoices: 0, credit_notes: 0 }));
        return line;
      };
      const countryOf = (evidence: string | null): string => (evidence === null ? '??' : ((JSON.parse(evidence) as TaxEvidence).place_of_supply ?? '??'));

      const sales = await db
        .selectFrom('invoices')
        .select(['tax_rate', 'tax', 'total', 'currency', 'tax_evidence'])
        .where('tax_rule', '=', 'oss')
        .where('status', 'in', ['paid', 'refunded'])
        .where('paid_at', '>=', quarter.from)
        .where('paid_at', '<', quarter.to)
        .execute();
      for (const sale of sales) {
        const line = lineOf(countryOf(sale.tax_evidence), num(sale.tax_rate), sale.currency);
        line.net += num(sale.total) - num(sale.tax);
        line.vat += num(sale.tax);
        line.invoices += 1;
      }

      const notes = await db
        .selectFrom('credit_notes as n')
        .innerJoin('invoices as i', 'i.id', 'n.invoice_id')
        .select(['n.subtotal', 'n.tax', 'n.source_key', 'i.tax_rate', 'i.tax as invoice_tax', 'i.total as invoice_total', 'i.currency', 'i.tax_evidence'])
        .where('i.tax_rule', '=', 'oss')
        .where('n.created_at', '>=', quarter.from)
        .where('n.created_at', '<', quarter.to)
        .execute();
      for (const note of notes) {
        const line = lineOf(countryOf(note.tax_evidence), num(note.tax_rate), note.currency);
        const correction = note.source_key.startsWith('vat:');
        line.net -= correction ? num(note.invoice_total) - num(note.invoice_tax) : num(note.subtotal);
        line.vat -= num(note.tax);
        line.credit_notes += 1;
      }

      const lines = [...sums.values()]
        .toSorted((a, b) => a.country.localeCompare(b.country) || a.rate - b.rate || a.currency.localeCompare(b.currency))
        .map((line) => {
          const precision = precisionOf(line.currency);
          return { country: line.country, rate: formatRate(line.rate), currency: line.currency, net: formatMoney(line.net, precision), vat: formatMoney(line.vat, precision), invoices: line.invoices, credit_notes: line.credit_notes };
        });
      return { quarter: quarter.label, from: quarter.from, to: quarter.to, lines };
    },
  };
}

export type OssReports = ReturnType<typeof createOssReport>;
