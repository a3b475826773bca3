// Countries and phone numbers from maintained data packages (i18n-iso-countries, libphonenumber-js), never a
// hand-written list. The lists are built once and shared.
import { isoCountries } from '../../platform/iso-countries.ts';
import { getCountries, getCountryCallingCode, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import { errors } from '../../platform/errors.ts';
import { isCountryCode } from '../../platform/settings-catalogue.ts';

let names: Readonly<Record<string, string>> | null = null;
let codes: Readonly<Record<string, string>> | null = null;

/** `{ "DE": "Germany", … }`, sorted by code. */
export function countryNames(): Readonly<Record<string, string>> {
  names ??= Object.fromEntries(Object.entries(isoCountries.getNames('en', { select: 'official' })).toSorted(([a], [b]) => a.localeCompare(b)));
  return names;
}

/** `{ "DE": "49", … }` for every country libphonenumber knows. */
export function phoneCodes(): Readonly<Record<string, string>> {
  codes ??= Object.fromEntries(getCountries().map((country) => [country, getCountryCallingCode(country)]));
  return codes;
}

/** An upper-cased ISO alpha-2 code; 422 naming `param` otherwise. */
export function checkCountry(value: string, param = 'country'): string {
  const code = value.trim().toUpperCase();
  if (!isCountryCode(code)) throw errors.invalid(param, 'must be an ISO 3166-1 alpha-2 country code (see guest/system/countries)');
  return code;
}

/**
 * A phone number in international form (E.164, e.g. "+4930123456"); a national number is read in the client's
 * country when one is known. 422 naming `param` when it is not a possible number there.
 */
export function checkPhone(value: string, country: string | null, param = 'phone'): string {
  const region = country !== null && (getCountries() as string[]).includes(country) ? (country as CountryCode) : undefined;
  const parsed = parsePhoneNumberFromString(value.trim(), region);
  if (parsed === undefined || !parsed.isValid()) {
    throw errors.invalid(param, 'must be a valid phone number, in international form such as "+4930123456"');
  }
  return parsed.number;
}

/**
 * FOSSBilling's two phone fields: `phone_cc` (the country calling code, "49" or "+49") and `phone` (the number as
 * dialled in that country, "030 123456"), read together into one international number ("+4930123456"). A `phone`
 * already in international form is taken as it is; 422 naming `phone_cc` for a code no country has.
 */
export function phoneWithCallingCode(callingCode: string | number, phone: string): string {
  const code = String(callingCode).trim().replace(/^\+/, '');
  if (!Object.values(phoneCodes()).includes(code)) throw errors.invalid('phone_cc', 'must be a country calling code such as "49" (see guest/system/phone_codes)');
  const text = phone.trim();
  if (text.startsWith('+')) return text;
  const parsed = parsePhoneNumberFromString(text, { defaultCallingCode: code });
  if (parsed === undefined || !parsed.isValid()) throw errors.invalid('phone', `must be a valid phone number for the calling code +${code}`);
  return parsed.number;
}
