// When VIES confirms a VAT number late (issue 26 item 1): the client's sales made while the check was outstanding
// were taxed as consumer sales in the buyer's country (`oss`). They are corrected in the transaction that stores the
// confirmation: an unpaid invoice is recalculated as a reverse-charge sale (0%, the mention), a paid one keeps its
// document and gets a credit note for its tax, credited to the client's balance. A sale made when VIES had answered
// "invalid" was rightly taxed and is left alone; so is a paid invoice already credited or refunded (staff decide).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { CreditNotes } from './credit-notes/service.ts';
import type { InvoiceRow, TaxEvidence } from './types.ts';
import '../vat/events.ts';

/** Statuses of a number at issue that a later confirmation corrects: the check had not answered yet. */
const OUTSTANDING = new Set(['pending', 'unchecked']);

export interface VatCorrectionDeps {
  events: EventBus;
  creditNotes: Pick<CreditNotes, 'forVatCorrection'>;
}

function correctedEvidence(row: InvoiceRow, consultationNumber: string | null, at: string): string {
  const evidence = JSON.parse(row.tax_evidence!) as TaxEvidence;
  return JSON.stringify({ ...evidence, vat_status: 'valid', consultation_number: consultationNumber, corrected_at: at });
}

/** Recalculates an unpaid invoice as a reverse-charge sale (compare-and-set on `unpaid`: a payment racing it wins). */
async function recalculate(trx: Kysely<Database>, row: InvoiceRow, consultationNumber: string | null, at: string): Promise<void> {
  const base = row.subtotal - row.discount;
  const result = await trx
    .updateTable('invoices')
    .set({ tax: 0, tax_rate: 0, tax_name: 'Reverse charge', tax_rule: 'reverse_charge', total: base, tax_evidence: correctedEvidence(row, consultationNumber, at), updated_at: at })
    .where('id', '=', row.id)
    .where('status', '=', 'unpaid')
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 1) await trx.updateTable('invoice_items').set({ tax_rule: 'reverse_charge' }).where('invoice_id', '=', row.id).execute();
}

export function correctSalesOnConfirmation({ events, creditNotes }: VatCorrectionDeps): void {
  events.on('vat.number_confirmed', async ({ clientId, vatNumber, consultationNumber }, trx) => {
    const now = new Date();
    const at = isoSeconds(now);
    const rows = await trx.selectFrom('invoices').selectAll().where('client_id', '=', clientId).where('tax_rule', '=', 'oss').where('status', 'in', ['unpaid', 'paid']).orderBy('id').execute();
    for (const row of rows) {
      const evidence = row.tax_evidence === null ? null : (JSON.parse(row.tax_evidence) as TaxEvidence);
      if (evidence === null || evidence.vat_number !== vatNumber || !OUTSTANDING.has(evidence.vat_status)) continue;
      if (row.status === 'unpaid') {
        await recalculate(trx, row, consultationNumber, at);
      } else {
        const reason = `VAT number ${vatNumber} confirmed by VIES${consultationNumber === null ? '' : ` (consultation ${consultationNumber})`}: reverse charge, the VAT charged is credited`;
        await creditNotes.forVatCorrection(trx, row.id, reason, now);
      }
    }
  });
}
