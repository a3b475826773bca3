// A client's profile fields as given (create, update) turned into the values to store: blanks cleared, the country an
// ISO code, the phone valid in it, the currency's code upper-cased (that it is one of the instance's, and not changed
// after the client's first order, is checked by the service against the currencies: currency/selling.ts).
import type { Updateable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { errors } from '../../platform/errors.ts';
import { checkCountry, checkPhone, phoneWithCallingCode } from '../system/countries.ts';

export const PROFILE_FIELDS = [
  'first_name',
  'last_name',
  'company',
  'phone',
  'address_1',
  'address_2',
  'city',
  'state',
  'postcode',
  'country',
  'currency',
  'vat_number',
] as const;

export type ProfileField = (typeof PROFILE_FIELDS)[number];
/** `phone_cc`: FOSSBilling's calling code sent apart from `phone` (read together by phoneWithCallingCode). */
export type ProfileInput = Partial<Record<ProfileField, string | undefined>> & { phone_cc?: string | number | undefined };

/**
 * Profile fields to store: a blank string clears an optional field (stored and returned as null). The country must
 * be an ISO alpha-2 code and the phone a valid number (read in the client's country, the new one or `currentCountry`).
 */
export function profileValues(given: ProfileInput, currentCountry: string | null = null): Updateable<Database['clients']> {
  const out: Record<string, string | null> = {};
  const code = given.phone_cc === undefined ? '' : String(given.phone_cc).trim();
  if (code !== '' && given.phone === undefined) throw errors.invalid('phone_cc', 'is only read together with phone');
  // A blank phone clears the number: the calling code sent beside it (FOSSBilling's forms always send one) means nothing.
  const input = code !== '' && given.phone!.trim() !== '' ? { ...given, phone: phoneWithCallingCode(code, given.phone!) } : given;
  const country = input.country === undefined || input.country === '' ? undefined : checkCountry(input.country);
  for (const field of PROFILE_FIELDS) {
    const value = input[field];
    if (value === undefined) continue;
    if (field === 'first_name') {
      if (value.trim() === '') throw errors.invalid('first_name', 'must not be empty');
      out[field] = value;
    } else if (field === 'currency') {
      if (value !== '' && !/^[A-Za-z]{3}$/.test(value)) throw errors.invalid('currency', 'must be a three-letter code');
      out[field] = value === '' ? null : value.toUpperCase();
    } else if (field === 'country' && country !== undefined) {
      out[field] = country;
    } else if (field === 'phone' && value.trim() !== '') {
      checkPhone(value, country ?? currentCountry);
      out[field] = value.trim();
    } else {
      out[field] = value === '' ? null : value;
    }
  }
  return out;
}

