// The card's country as evidence of where the buyer is (issue 26 item 2; docs/eu-vat.md "the evidence"). An invoice is
// taxed when it is issued, before anyone pays it, so the card's issuing country is known only when a provider reports
// the payment: it is then added to the invoice's `tax_evidence` beside the billing and IP countries. It never changes
// the tax: the billing country decided, and a card that names another country sets `conflict` for staff to review,
// as an IP country does at checkout. Written once: the card of the payment that paid the invoice; a later report of
// the same payment (Stripe sends two events for one Checkout payment) only fills it in if the first could not tell.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { TaxEvidence } from './types.ts';

/** An ISO 3166-1 alpha-2 code as providers report it ("fr" or "FR"), else null. */
export function cardCountryCode(value: string | null | undefined): string | null {
  const text = value?.trim().toUpperCase() ?? '';
  return /^[A-Z]{2}$/.test(text) ? text : null;
}

/**
 * Records `country` (the card the invoice was paid with) in the invoice's tax evidence, inside the payment's
 * transaction (which holds the invoice's row lock). Nothing happens when the invoice has no evidence (it was not taxed
 * by the EU rules), the country is not a country code, or a card country is already recorded. Answers whether it wrote.
 */
export async function recordCardCountry(trx: Kysely<Database>, invoiceId: number, country: string | null | undefined): Promise<boolean> {
  const card = cardCountryCode(country);
  if (card === null) return false;
  const row = await trx.selectFrom('invoices').select('tax_evidence').where('id', '=', invoiceId).executeTakeFirst();
  if (row?.tax_evidence === null || row?.tax_evidence === undefined) return false;
  const evidence = JSON.parse(row.tax_evidence) as TaxEvidence;
  if (evidence.card_country !== null) return false;
  // The country the sale was taxed in: the place of supply, or the seller's own when nothing told (lib/eu-vat.ts).
  const taxedIn = evidence.place_of_supply ?? evidence.seller_country;
  const updated: TaxEvidence = { ...evidence, card_country: card, conflict: evidence.conflict || (taxedIn !== null && card !== taxedIn) };
  // Compare-and-set on the text read: two reports of the payment racing each other write it once.
  const result = await trx
    .updateTable('invoices')
    .set({ tax_evidence: JSON.stringify(updated) })
    .where('id', '=', invoiceId)
    .where('tax_evidence', '=', row.tax_evidence)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
