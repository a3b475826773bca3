// EU VAT identification numbers (issue 26 item 1): each member state's format as VIES documents it, so a mistyped
// number is refused at once (422 naming the field) instead of waiting for VIES to say so. Pure: no I/O.
//
// A number is stored normalised: upper case, without spaces, dots or dashes, with its VIES prefix — the ISO country
// code except Greece, whose prefix is EL. Northern Ireland's XI numbers are not taken: a client in GB is outside the
// EU for Tollgate's rules (its number is kept as typed, like any other non-EU number).
import { InvalidInput } from './invalid-input.ts';

/** The number after its prefix, per ISO country code of the 27 member states. */
const FORMATS: Readonly<Record<string, RegExp>> = {
  AT: /^U\d{8}$/,
  BE: /^[01]\d{9}$/,
  BG: /^\d{9,10}$/,
  CY: /^\d{8}[A-Z]$/,
  CZ: /^\d{8,10}$/,
  DE: /^\d{9}$/,
  DK: /^\d{8}$/,
  EE: /^\d{9}$/,
  GR: /^\d{9}$/,
  ES: /^[A-Z0-9]\d{7}[A-Z0-9]$/,
  FI: /^\d{8}$/,
  FR: /^[A-HJ-NP-Z0-9]{2}\d{9}$/,
  HR: /^\d{11}$/,
  HU: /^\d{8}$/,
  IE: /^(\d{7}[A-W][A-IW]?|\d[A-Z+*]\d{5}[A-W])$/,
  IT: /^\d{11}$/,
  LT: /^(\d{9}|\d{12})$/,
  LU: /^\d{8}$/,
  LV: /^\d{11}$/,
  MT: /^\d{8}$/,
  NL: /^\d{9}B\d{2}$/,
  PL: /^\d{10}$/,
  PT: /^\d{9}$/,
  RO: /^[1-9]\d{1,9}$/,
  SE: /^\d{10}01$/,
  SI: /^\d{8}$/,
  SK: /^\d{10}$/,
};

/** A human hint per country, for the 422's message. */
const EXAMPLES: Readonly<Record<string, string>> = {
  AT: 'ATU12345678', BE: 'BE0123456789', BG: 'BG123456789', CY: 'CY12345678X', CZ: 'CZ12345678', DE: 'DE123456789',
  DK: 'DK12345678', EE: 'EE123456789', GR: 'EL123456789', ES: 'ESX1234567X', FI: 'FI12345678', FR: 'FRXX123456789',
  HR: 'HR12345678901', HU: 'HU12345678', IE: 'IE1234567WA', IT: 'IT12345678901', LT: 'LT123456789', LU: 'LU12345678',
  LV: 'LV12345678901', MT: 'MT12345678', NL: 'NL123456789B01', PL: 'PL1234567890', PT: 'PT123456789', RO: 'RO1234567',
  SE: 'SE123456789001', SI: 'SI12345678', SK: 'SK1234567890',
};

/** The ISO 3166-1 alpha-2 codes of the EU's 27 member states. */
export const EU_MEMBER_STATES: readonly string[] = Object.keys(FORMATS).toSorted();

export function isEuMemberState(country: string | null | undefined): boolean {
  return country !== null && country !== undefined && Object.hasOwn(FORMATS, country);
}

/** The prefix VIES uses for a member state: its ISO code, except Greece (EL). */
export function viesPrefix(country: string): string {
  return country === 'GR' ? 'EL' : country;
}

/** The member state a VIES prefix stands for (EL → GR), or null when it is none. */
export function countryOfPrefix(prefix: string): string | null {
  // Greek numbers carry EL, never GR.
  if (prefix === 'GR') return null;
  const country = prefix === 'EL' ? 'GR' : prefix;
  return isEuMemberState(country) ? country : null;
}

/** A number as typed, without separators and in upper case ("de 123.456-789" → "DE123456789"). */
export function compactVatNumber(text: string): string {
  return text.replace(/[\s.\-/]/g, '').toUpperCase();
}

export interface EuVatNumber {
  /** ISO country code of the member state (GR for Greece). */
  country: string;
  /** The number after the prefix, as VIES takes it. */
  number: string;
  /** Prefix and number: what is stored and shown. */
  full: string;
}

/**
 * Reads `text` as a VAT number of the member state `country` (the prefix may be left out); null when it is not in
 * that state's format. `country` must be a member state.
 */
export function parseEuVatNumber(country: string, text: string): EuVatNumber | null {
  const format = FORMATS[country];
  if (format === undefined) return null;
  const prefix = viesPrefix(country);
  let compact = compactVatNumber(text);
  if (compact.startsWith(prefix)) compact = compact.slice(prefix.length);
  else if (country === 'GR' && compact.startsWith('GR')) compact = compact.slice(2);
  if (!format.test(compact)) return null;
  return { country, number: compact, full: `${prefix}${compact}` };
}

/**
 * The VAT number to store for a client in `country`: for a member state, the normalised number in its format (422
 * naming `param` otherwise); elsewhere, or with no country, the number as typed (trimmed) unless it carries a member
 * state's prefix, which then decides its format. '' clears the number (null).
 */
export function normalizeVatNumber(text: string, country: string | null, param = 'vat_number'): string | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  let state = isEuMemberState(country) ? country! : null;
  if (state === null && country === null) state = countryOfPrefix(compactVatNumber(trimmed).slice(0, 2));
  if (state === null) return trimmed;
  const parsed = parseEuVatNumber(state, trimmed);
  if (parsed === null) throw new InvalidInput(param, `is not a valid ${state} VAT number (expected the form ${EXAMPLES[state]})`);
  return parsed.full;
}
