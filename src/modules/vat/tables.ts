// Tables of the vat module (issue 26): the last VIES answer per client and the member states' rates. Only this module
// writes them.
import type { ColumnType, Generated } from 'kysely';

export type VatCheckStatus = 'pending' | 'valid' | 'invalid';

/** Migration 051: what VIES last said of a client's VAT number (one row per client). */
export interface VatCheckTable {
  id: Generated<number>;
  client_id: number;
  /** The number checked, normalised with its prefix (DE123456789); a new number starts a new check. */
  vat_number: string;
  /** ISO code of its member state. */
  country: string;
  status: VatCheckStatus;
  /** VIES's requestIdentifier: the consultation number that proves the check. */
  consultation_number: string | null;
  /** VIES's requestDate of the last answer. */
  checked_at: string | null;
  name: string | null;
  address: string | null;
  /** Why the last attempt got no answer (VIES down, MS_UNAVAILABLE…); null after an answer. */
  last_error: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  created_at: string;
  updated_at: string;
}

/** Migration 051: a member state's standard rate, thousandths of a percent. */
export interface VatRateTable {
  id: Generated<number>;
  country: string;
  rate: number;
  updated_at: string;
}

export interface VatTables {
  vat_checks: VatCheckTable;
  vat_rates: VatRateTable;
}
