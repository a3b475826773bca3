// A VAT number as VIES sees it (issue 26), shown the same on the staff client page and the client's profile.
import { html } from 'htm/preact';
import type { Result } from './api.ts';
import { formatDateTime } from './format.ts';
import { DefinitionList } from './ui.ts';

export type VatCheck = Result<'admin/client/vat_status'>;

const WORDS: Record<VatCheck['status'], string> = {
  none: 'No VAT number',
  not_applicable: 'Not an EU VAT number (VIES cannot check it)',
  unchecked: 'Not checked yet',
  pending: 'Being checked: VIES has not answered yet, it is asked again later',
  valid: 'Valid (confirmed by VIES)',
  invalid: 'Not valid according to VIES',
};

export function VatStatusList({ check }: { check: VatCheck }) {
  return html`<${DefinitionList}
    items=${[
      ['VAT number', check.vat_number ?? '—'],
      ['Status', html`<span data-testid="vat-status">${WORDS[check.status]}</span>`],
      ...(check.consultation_number !== null ? [['Consultation number', check.consultation_number] as const] : []),
      ...(check.checked_at !== null ? [['Checked', formatDateTime(check.checked_at)] as const] : []),
      ...(check.name !== null ? [['Name at VIES', check.name] as const] : []),
      ...(check.address !== null ? [['Address at VIES', check.address] as const] : []),
      ...(check.last_error !== null && check.status === 'pending' ? [['Last attempt', check.last_error] as const] : []),
    ]}
  />`;
}
