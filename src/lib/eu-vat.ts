// The EU VAT rules for a sale of electronically supplied services (issue 26 item 2), as one pure function so the whole
// matrix can be property-tested: who sells (an EU seller applying the EU rules, or not), where the buyer is, and
// whether the buyer's VAT number is confirmed valid decide the rule and the rate. Pure: no I/O.
//
//   seller outside the EU (or the EU rules off) → `manual`: today's tax rules by country (invoice/taxes.ts)
//   buyer in the seller's country               → `domestic`: the seller's rate, VAT number or not
//   buyer outside the EU                        → `export`: no EU VAT
//   buyer in another member state, valid number → `reverse_charge`: 0%, the buyer accounts for the VAT
//   buyer in another member state, otherwise    → `oss`: the buyer's country's rate, declared through the One-Stop-Shop
//
// A number VIES has not confirmed (unchecked, pending, invalid) is a consumer's sale: the seller owes the VAT until the
// number is proven, and a later confirmation corrects the invoice (vat/settle.ts).
import { fractionOf, percentOf, RATE_SCALE } from './rates.ts';
import { isEuMemberState } from './vat-numbers.ts';

/** The rule that chose an invoice line's rate; `exempt` a tax-exempt client, `untaxed` a balance top-up. */
export type TaxRule = 'domestic' | 'reverse_charge' | 'oss' | 'export' | 'manual' | 'exempt' | 'untaxed';
export const TAX_RULES: readonly TaxRule[] = ['domestic', 'reverse_charge', 'oss', 'export', 'manual', 'exempt', 'untaxed'];

/** What is known of the buyer's VAT number: `none` when it has none. */
export type VatStatus = 'valid' | 'invalid' | 'pending' | 'unchecked' | 'none';

/** The mention a reverse-charged invoice carries (Article 226(11a) asks for it; Article 196 is the rule). */
export const REVERSE_CHARGE_MENTION = 'Reverse charge — VAT to be accounted for by the recipient, Article 196 Directive 2006/112/EC';

/** The member states' standard rates in thousandths of a percent (1 January 2026), shipped as data staff can edit. */
export const EU_STANDARD_RATES: Readonly<Record<string, number>> = {
  AT: 20_000, BE: 21_000, BG: 20_000, CY: 19_000, CZ: 21_000, DE: 19_000, DK: 25_000, EE: 24_000, ES: 21_000,
  FI: 25_500, FR: 20_000, GR: 24_000, HR: 25_000, HU: 27_000, IE: 23_000, IT: 22_000, LT: 21_000, LU: 17_000,
  LV: 21_000, MT: 18_000, NL: 21_000, PL: 23_000, PT: 23_000, RO: 21_000, SE: 25_000, SI: 22_000, SK: 23_000,
};

export interface Sale {
  /** The seller's country (setting company_country) and whether the instance applies the EU rules (setting eu_vat). */
  sellerCountry: string | null;
  euVat: boolean;
  /** The country the sale is taxed in (placeOfSupply); null when nothing tells. */
  buyerCountry: string | null;
  vatStatus: VatStatus;
}

export type TaxChoice =
  | { rule: 'manual' }
  | { rule: 'domestic' | 'oss'; country: string; rate: number }
  | { rule: 'reverse_charge' | 'export'; country: string | null; rate: 0 };

/** Whether the EU rules decide this instance's taxes. */
export function appliesEuRules(sellerCountry: string | null, euVat: boolean): boolean {
  return euVat && isEuMemberState(sellerCountry);
}

/**
 * The rule and rate for a sale; `rateOf` gives a member state's rate (thousandths of a percent). A buyer whose country
 * nothing tells is taxed as a domestic sale: the seller's own VAT is the one never wrongly left out.
 */
export function chooseTaxRule(sale: Sale, rateOf: (country: string) => number): TaxChoice {
  if (!appliesEuRules(sale.sellerCountry, sale.euVat)) return { rule: 'manual' };
  const seller = sale.sellerCountry!;
  const buyer = sale.buyerCountry ?? seller;
  if (buyer === seller) return { rule: 'domestic', country: seller, rate: rateOf(seller) };
  if (!isEuMemberState(buyer)) return { rule: 'export', country: buyer, rate: 0 };
  if (sale.vatStatus === 'valid') return { rule: 'reverse_charge', country: buyer, rate: 0 };
  return { rule: 'oss', country: buyer, rate: rateOf(buyer) };
}

/** The pieces of evidence of where a buyer is (Implementing Regulation 282/2011, Article 24b and 24f). */
export interface CountryEvidence {
  /** The billing address's country: the buyer's own declaration. */
  billing: string | null;
  /** The country of the buyer's IP address, when a lookup is configured. */
  ip: string | null;
  /** The issuing country of the card paid with, when known. */
  card: string | null;
}

/**
 * The country a sale is taxed in: the billing address's, which the buyer declared and the invoice names; the other
 * pieces only confirm it. When one contradicts it the billing country still decides and `conflict` is set, recorded on
 * the invoice for staff to review (an IP behind a VPN or a card issued abroad is common; an address is what the buyer
 * answers for). Without a billing country the card's, then the IP's, decides.
 */
export function placeOfSupply(evidence: CountryEvidence): { country: string | null; conflict: boolean } {
  const country = evidence.billing ?? evidence.card ?? evidence.ip;
  const others = [evidence.ip, evidence.card].filter((piece): piece is string => piece !== null);
  return { country, conflict: country !== null && others.some((piece) => piece !== country) };
}

/**
 * The buyer's IP country from a proxy's or CDN's header (e.g. CF-IPCountry), or null: two letters, not one of the
 * codes such headers use for "unknown" (XX, ZZ) or Tor (T1).
 */
export function countryFromHeader(value: string | string[] | undefined): string | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim().toUpperCase() ?? '';
  return /^[A-Z]{2}$/.test(text) && !['XX', 'ZZ', 'T1'].includes(text) ? text : null;
}

/**
 * The tax on `base` (what the buyer is charged before tax, or with tax when `inclusive`), rounded half up once: with
 * tax-exclusive prices tax is added on top; with tax-inclusive prices it is taken out of the price, which stays
 * what the buyer pays. Integers in, integers out.
 */
export function taxOn(base: number, rate: number, inclusive: boolean): { tax: number; total: number } {
  if (!inclusive) {
    const tax = percentOf(base, rate);
    return { tax, total: base + tax };
  }
  return { tax: fractionOf(base, rate, RATE_SCALE + rate), total: base };
}
