// The tax of a new invoice (CONTRACT §8, issue 26 item 2): which rule applies, at which rate, whether prices include
// tax, and the evidence it was decided on. An EU seller applying the EU rules (settings eu_vat and company_country)
// goes through lib/eu-vat.ts with the client's billing country, the IP country when a lookup is configured, and what
// VIES said of the VAT number; any other seller keeps the manual rules by country (taxes.ts).
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { appliesEuRules, chooseTaxRule, EU_STANDARD_RATES, placeOfSupply, type TaxRule, type VatStatus } from '../../lib/eu-vat.ts';
import type { SystemService } from '../system/service.ts';
import type { TaxService } from './taxes.ts';
import type { TaxEvidence } from './types.ts';

/** What the sale needs of the vat module (built after the invoice service: services.ts hands these in lazily). */
export interface SaleVat {
  statusFor(trx: Kysely<Database>, clientId: number, vatNumber: string | null): Promise<{ status: VatStatus; consultationNumber: string | null }>;
  requestIfUnchecked(trx: Kysely<Database>, clientId: number, vatNumber: string | null, now: Date): Promise<void>;
  ratesIn(trx: Kysely<Database>): Promise<Map<string, number>>;
}

export interface SaleTax {
  rule: TaxRule;
  name: string | null;
  /** Thousandths of a percent. */
  rate: number;
  inclusive: boolean;
  evidence: TaxEvidence | null;
}

export interface SaleTaxDeps {
  settings: Pick<SystemService, 'peek' | 'company'>;
  taxes: Pick<TaxService, 'forBuyer'>;
  vat: SaleVat;
}

/** The tax names invoices show for each EU rule. */
function euTaxName(rule: TaxRule, country: string | null): string | null {
  if (rule === 'reverse_charge') return 'Reverse charge';
  if (rule === 'export') return null;
  return `VAT ${country ?? ''}`.trim();
}

export function createSaleTax({ settings, taxes, vat }: SaleTaxDeps) {
  return {
    /** Inside the invoice's transaction (settings are read from this process's copy: `get` would wait on SQLite). */
    async decide(
      trx: Kysely<Database>,
      client: Pick<Selectable<Database['clients']>, 'id' | 'country' | 'state' | 'vat_number' | 'tax_exempt'>,
      options: { taxed: boolean; ipCountry: string | null; now: Date },
    ): Promise<SaleTax> {
      const inclusive = settings.peek('tax_inclusive');
      const none = (rule: TaxRule): SaleTax => ({ rule, name: null, rate: 0, inclusive, evidence: null });
      if (!options.taxed) return none('untaxed');
      if (client.tax_exempt === 1) return none('exempt');
      const seller = (await settings.company(trx)).country;
      const euVat = settings.peek('eu_vat');
      if (!appliesEuRules(seller, euVat)) {
        const manual = await taxes.forBuyer(trx, client.country, client.state);
        return { rule: 'manual', name: manual?.name ?? null, rate: manual?.rate ?? 0, inclusive, evidence: null };
      }
      const place = placeOfSupply({ billing: client.country, ip: options.ipCountry, card: null });
      // A number never checked is queued for VIES now; the sale does not wait for it.
      await vat.requestIfUnchecked(trx, client.id, client.vat_number, options.now);
      const known = await vat.statusFor(trx, client.id, client.vat_number);
      const rates = await vat.ratesIn(trx);
      const choice = chooseTaxRule({ sellerCountry: seller, euVat, buyerCountry: place.country, vatStatus: known.status }, (country) => rates.get(country) ?? EU_STANDARD_RATES[country] ?? 0);
      // chooseTaxRule answers `manual` only when the EU rules do not apply, which was ruled out above.
      const country = choice.rule === 'manual' ? null : choice.country;
      const rate = choice.rule === 'manual' ? 0 : choice.rate;
      const evidence: TaxEvidence = {
        seller_country: seller,
        billing_country: client.country,
        ip_country: options.ipCountry,
        card_country: null,
        place_of_supply: place.country,
        conflict: place.conflict,
        vat_number: client.vat_number,
        vat_status: known.status,
        consultation_number: known.consultationNumber,
        corrected_at: null,
      };
      return { rule: choice.rule, name: euTaxName(choice.rule, country), rate, inclusive, evidence };
    },
  };
}

export type SaleTaxDecider = ReturnType<typeof createSaleTax>;
