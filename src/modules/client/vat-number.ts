// The client's VAT number (CONTRACT §8, issue 26 item 1): checked for its member state's format whenever it or the
// billing country changes (lib/vat-numbers.ts: 422 naming `vat_number`), stored normalised, and announced so the vat
// module can check it with VIES.
import type { Kysely, Updateable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { normalizeVatNumber } from '../../lib/vat-numbers.ts';

type Profile = Updateable<Database['clients']>;
type Current = { vat_number: string | null; country: string | null };

/**
 * `profile` with its VAT number normalised for the client's (new or current) country; a changed country re-reads the
 * number kept, so a German number cannot stay on a French address unnoticed.
 */
export function withCheckedVatNumber(profile: Profile, current: Current | null): Profile {
  const country = profile.country !== undefined ? (profile.country ?? null) : (current?.country ?? null);
  if (profile.vat_number !== undefined && profile.vat_number !== null) return { ...profile, vat_number: normalizeVatNumber(profile.vat_number, country) };
  const kept = current?.vat_number ?? null;
  if (profile.country !== undefined && profile.vat_number === undefined && kept !== null) return { ...profile, vat_number: normalizeVatNumber(kept, country) };
  return profile;
}

/** Inside the changing transaction: tells the vat module when the number or the country it is read in changed. */
export async function announceVatNumber(events: EventBus, trx: Kysely<Database>, clientId: number, profile: Profile, current: Current | null): Promise<void> {
  const vatNumber = profile.vat_number !== undefined ? (profile.vat_number ?? null) : (current?.vat_number ?? null);
  const country = profile.country !== undefined ? (profile.country ?? null) : (current?.country ?? null);
  if (vatNumber === (current?.vat_number ?? null) && country === (current?.country ?? null)) return;
  if (vatNumber === null && (current?.vat_number ?? null) === null) return;
  await events.emit('client.vat_number_changed', { clientId, vatNumber, country }, trx);
}
