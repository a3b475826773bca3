// EU VAT number formats (src/lib/vat-numbers.ts): every member state has a format and an example that passes it, a
// number is normalised the same however it is typed, and seeded random mutations of good numbers are refused.
import { describe, expect, it } from 'vitest';
import { InvalidInput } from '../../src/lib/invalid-input.ts';
import { compactVatNumber, countryOfPrefix, EU_MEMBER_STATES, isEuMemberState, normalizeVatNumber, parseEuVatNumber, viesPrefix } from '../../src/lib/vat-numbers.ts';

const GOOD: Record<string, string> = {
  AT: 'ATU12345678', BE: 'BE0123456789', BG: 'BG123456789', CY: 'CY12345678X', CZ: 'CZ12345678', DE: 'DE123456789',
  DK: 'DK12345678', EE: 'EE123456789', GR: 'EL123456789', ES: 'ESX1234567X', FI: 'FI12345678', FR: 'FRXX123456789',
  HR: 'HR12345678901', HU: 'HU12345678', IE: 'IE1234567WA', IT: 'IT12345678901', LT: 'LT123456789', LU: 'LU12345678',
  LV: 'LV12345678901', MT: 'MT12345678', NL: 'NL123456789B01', PL: 'PL1234567890', PT: 'PT123456789', RO: 'RO1234567',
  SE: 'SE123456789001', SI: 'SI12345678', SK: 'SK1234567890',
};

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

describe('EU VAT number formats', () => {
  it('knows the 27 member states and their VIES prefixes', () => {
    expect(EU_MEMBER_STATES).toHaveLength(27);
    expect(Object.keys(GOOD).toSorted()).toEqual(EU_MEMBER_STATES);
    expect(isEuMemberState('FR')).toBe(true);
    expect(isEuMemberState('GB')).toBe(false);
    expect(isEuMemberState(null)).toBe(false);
    expect(viesPrefix('GR')).toBe('EL');
    expect(countryOfPrefix('EL')).toBe('GR');
    expect(countryOfPrefix('GR')).toBeNull();
    expect(countryOfPrefix('US')).toBeNull();
  });

  it("accepts each state's example with or without its prefix, however separated", () => {
    for (const [country, full] of Object.entries(GOOD)) {
      const prefix = viesPrefix(country);
      expect(parseEuVatNumber(country, full)?.full, country).toBe(full);
      expect(parseEuVatNumber(country, full.slice(prefix.length))?.full, country).toBe(full);
      const spaced = `${full.slice(0, 2).toLowerCase()} ${full.slice(2, 5)}.${full.slice(5)}`;
      expect(normalizeVatNumber(spaced, country), country).toBe(full);
      expect(parseEuVatNumber(country, full)?.number).toBe(full.slice(prefix.length));
    }
    expect(compactVatNumber(' de-123 456/789 ')).toBe('DE123456789');
    expect(normalizeVatNumber('GR123456789', 'GR')).toBe('EL123456789');
  });

  it('refuses malformed numbers with a 422 naming the field and the expected form', () => {
    for (const bad of ['DE12345678', 'DE1234567890', 'DEABCDEFGHI', 'FR123', 'NL123456789A01', 'ATU1234567', 'SE1234567890']) {
      const country = bad.slice(0, 2);
      expect(() => normalizeVatNumber(bad, country), bad).toThrow(InvalidInput);
    }
    try {
      normalizeVatNumber('DE111', 'DE');
    } catch (error) {
      expect(error).toMatchObject({ param: 'vat_number', problem: expect.stringContaining('DE123456789') });
    }
    // A number of another member state than the billing country is not the buyer's.
    expect(() => normalizeVatNumber('FRXX123456789', 'DE')).toThrow(InvalidInput);
  });

  it('keeps numbers outside the EU as typed, reads the prefix when there is no country, and clears on blank', () => {
    expect(normalizeVatNumber(' GB 123 4567 89 ', 'GB')).toBe('GB 123 4567 89');
    expect(normalizeVatNumber('12-3456789', 'US')).toBe('12-3456789');
    expect(normalizeVatNumber('de123456789', null)).toBe('DE123456789');
    expect(() => normalizeVatNumber('DE12', null)).toThrow(InvalidInput);
    expect(normalizeVatNumber('X-123', null)).toBe('X-123');
    expect(normalizeVatNumber('  ', 'DE')).toBeNull();
  });

  it('refuses random one-character changes of good numbers that break the format (seeded)', () => {
    const next = random(2026_11_26);
    const alphabet = '0123456789ABCXYZ';
    let refused = 0;
    for (let i = 0; i < 3000; i += 1) {
      const countries = Object.keys(GOOD);
      const country = countries[Math.floor(next() * countries.length)]!;
      const good = GOOD[country]!;
      const body = good.slice(viesPrefix(country).length);
      // Either drop a character, add one, or replace one.
      const at = Math.floor(next() * body.length);
      const char = alphabet[Math.floor(next() * alphabet.length)]!;
      const kind = Math.floor(next() * 3);
      const mutated = kind === 0 ? body.slice(0, at) + body.slice(at + 1) : kind === 1 ? body.slice(0, at) + char + body.slice(at) : body.slice(0, at) + char + body.slice(at + 1);
      const parsed = parseEuVatNumber(country, mutated);
      // Whatever is accepted is stored normalised and reads back to itself.
      if (parsed !== null) expect(parseEuVatNumber(country, parsed.full)).toEqual(parsed);
      else refused += 1;
      // Letters where only digits may stand are always refused.
      if (/^\d+$/.test(body) && /[A-Z]/.test(mutated)) expect(parsed, `${country} ${mutated}`).toBeNull();
    }
    expect(refused).toBeGreaterThan(1000);
  });
});
