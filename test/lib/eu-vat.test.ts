// The EU VAT matrix (src/lib/eu-vat.ts) as property tests: seller in or outside the EU (and the EU rules on or off) ×
// buyer country × VAT number status × business or consumer × tax-inclusive prices on or off → the rule, the rate, the
// reverse-charge mention, and totals that are whole minor units adding up exactly.
import { describe, expect, it } from 'vitest';
import { appliesEuRules, chooseTaxRule, EU_STANDARD_RATES, placeOfSupply, REVERSE_CHARGE_MENTION, taxOn, type TaxChoice, type VatStatus } from '../../src/lib/eu-vat.ts';
import { RATE_SCALE } from '../../src/lib/rates.ts';
import { EU_MEMBER_STATES, isEuMemberState } from '../../src/lib/vat-numbers.ts';

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

const SELLERS = [null, 'DE', 'FR', 'IE', 'US', 'GB', 'CH'];
const BUYERS = [null, ...EU_MEMBER_STATES, 'US', 'GB', 'CH', 'JP', 'NO', 'BR'];
const STATUSES: VatStatus[] = ['valid', 'invalid', 'pending', 'unchecked', 'none'];
const rateOf = (country: string): number => EU_STANDARD_RATES[country]!;

/** What the invoice says beside its totals. */
function mentionOf(choice: TaxChoice): string | null {
  return choice.rule === 'reverse_charge' ? REVERSE_CHARGE_MENTION : null;
}

describe('the EU VAT matrix', () => {
  it('ships a standard rate for each of the 27 member states', () => {
    expect(Object.keys(EU_STANDARD_RATES).toSorted()).toEqual([...EU_MEMBER_STATES]);
    for (const rate of Object.values(EU_STANDARD_RATES)) expect(rate).toBeGreaterThanOrEqual(15_000);
    expect(EU_STANDARD_RATES.DE).toBe(19_000);
    expect(EU_STANDARD_RATES.FR).toBe(20_000);
  });

  it('decides every combination by the rules, whatever the buyer being a business says without a valid number', () => {
    let cases = 0;
    for (const euVat of [true, false]) {
      for (const seller of SELLERS) {
        for (const buyer of BUYERS) {
          for (const status of STATUSES) {
            for (const business of [true, false]) {
              // A business without a VIES-confirmed number is taxed as a consumer: "business" changes nothing by itself.
              const vatStatus: VatStatus = business ? status : 'none';
              const choice = chooseTaxRule({ sellerCountry: seller, euVat, buyerCountry: buyer, vatStatus }, rateOf);
              cases += 1;
              const label = `${euVat} ${seller} → ${buyer} ${vatStatus}`;
              if (!euVat || !isEuMemberState(seller)) {
                expect(choice, label).toEqual({ rule: 'manual' });
                expect(appliesEuRules(seller, euVat)).toBe(false);
                continue;
              }
              const place = buyer ?? seller;
              if (place === seller) expect(choice, label).toEqual({ rule: 'domestic', country: seller, rate: rateOf(seller!) });
              else if (!isEuMemberState(place)) expect(choice, label).toEqual({ rule: 'export', country: place, rate: 0 });
              else if (vatStatus === 'valid') expect(choice, label).toEqual({ rule: 'reverse_charge', country: place, rate: 0 });
              else expect(choice, label).toEqual({ rule: 'oss', country: place, rate: rateOf(place!) });
              expect(mentionOf(choice) !== null, label).toBe(choice.rule === 'reverse_charge');
            }
          }
        }
      }
    }
    expect(cases).toBe(2 * SELLERS.length * BUYERS.length * STATUSES.length * 2);
  });

  it('uses the rate staff set in the table, not the shipped one', () => {
    const edited = (country: string): number => (country === 'FR' ? 5_500 : rateOf(country));
    expect(chooseTaxRule({ sellerCountry: 'DE', euVat: true, buyerCountry: 'FR', vatStatus: 'none' }, edited)).toEqual({ rule: 'oss', country: 'FR', rate: 5_500 });
  });

  it('takes the billing country as the place of supply and records a contradicting piece of evidence', () => {
    expect(placeOfSupply({ billing: 'FR', ip: 'FR', card: null })).toEqual({ country: 'FR', conflict: false });
    expect(placeOfSupply({ billing: 'FR', ip: 'DE', card: null })).toEqual({ country: 'FR', conflict: true });
    expect(placeOfSupply({ billing: 'FR', ip: null, card: 'BE' })).toEqual({ country: 'FR', conflict: true });
    expect(placeOfSupply({ billing: null, ip: 'IT', card: 'ES' })).toEqual({ country: 'ES', conflict: true });
    expect(placeOfSupply({ billing: null, ip: 'IT', card: null })).toEqual({ country: 'IT', conflict: false });
    expect(placeOfSupply({ billing: null, ip: null, card: null })).toEqual({ country: null, conflict: false });
  });

  it('adds tax on exclusive prices and extracts it from inclusive ones, in whole minor units (seeded)', () => {
    expect(taxOn(1000, 19_000, false)).toEqual({ tax: 190, total: 1190 });
    expect(taxOn(1190, 19_000, true)).toEqual({ tax: 190, total: 1190 });
    expect(taxOn(1000, 20_000, true)).toEqual({ tax: 167, total: 1000 });
    expect(taxOn(1000, 0, true)).toEqual({ tax: 0, total: 1000 });
    const next = random(26_2026);
    for (let i = 0; i < 20_000; i += 1) {
      const base = Math.floor(next() * 10_000_000);
      const rate = Math.floor(next() * 30_001);
      const inclusive = next() < 0.5;
      const { tax, total } = taxOn(base, rate, inclusive);
      expect(Number.isSafeInteger(tax) && Number.isSafeInteger(total)).toBe(true);
      expect(tax).toBeGreaterThanOrEqual(0);
      if (inclusive) {
        // The buyer pays the shown price; net + tax is that price; the tax is the rate of the net, within rounding.
        expect(total).toBe(base);
        const net = total - tax;
        expect(Math.abs(tax * RATE_SCALE - net * rate)).toBeLessThanOrEqual(RATE_SCALE + rate);
      } else {
        expect(total).toBe(base + tax);
        expect(Math.abs(tax * RATE_SCALE - base * rate)).toBeLessThanOrEqual(RATE_SCALE / 2);
      }
    }
  });

  it('gives the reverse charge and export 0% under either price mode: the buyer pays the price shown', () => {
    for (const inclusive of [true, false]) {
      for (const buyer of ['FR', 'US']) {
        const choice = chooseTaxRule({ sellerCountry: 'DE', euVat: true, buyerCountry: buyer, vatStatus: 'valid' }, rateOf);
        expect(choice.rule === 'manual' ? -1 : choice.rate).toBe(0);
        expect(taxOn(4999, 0, inclusive)).toEqual({ tax: 0, total: 4999 });
      }
    }
  });
});
