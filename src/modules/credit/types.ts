// Records the credit module hands out.
import type { CreditKind } from './tables.ts';

/** One ledger entry as the balance actions list it: FOSSBilling's {id, description, amount, currency, created_at} and more. */
export interface CreditEntryRecord {
  id: number;
  client_id: number;
  type: CreditKind;
  description: string;
  /** Signed decimal string: credits positive, debits negative. */
  amount: string;
  currency: string;
  /** Grants: when what is left of them expires. */
  expires_at: string | null;
  invoice_id: number | null;
  staff_id: number | null;
  /** balance_delete's compensating adjust names the entry it reverses. */
  reverses_id: number | null;
  /** The compensating adjust that reversed this line, if one did. */
  reversed_by: number | null;
  created_at: string;
}

export interface CreditFilters {
  client_id?: number | undefined;
  id?: number | undefined;
  type?: CreditKind | undefined;
  date_from?: string | undefined;
  date_to?: string | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

/** admin/client/balance_add_funds, checked: `amount` signed minor units (not 0). */
export interface AddFunds {
  clientId: number;
  amount: number;
  description: string;
  /** `grant`: promotional credit (spent first, may expire); else an `adjust` by staff. */
  type: 'adjust' | 'grant';
  expiresAt: string | null;
  /** The caller's own key, so a retried call writes once; without one every call is new. */
  key: string | null;
  staffId: number | null;
}
