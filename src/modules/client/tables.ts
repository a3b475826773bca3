// Tables of the client module: the clients. Only this module writes them.
import type { ColumnType, Generated } from 'kysely';

export interface ClientTable {
  id: Generated<number>;
  email: string;
  password_hash: string | null;
  first_name: string;
  last_name: string | null;
  company: string | null;
  phone: string | null;
  address_1: string | null;
  address_2: string | null;
  city: string | null;
  state: string | null;
  postcode: string | null;
  country: string | null;
  currency: string | null;
  status: 'active' | 'suspended' | 'canceled';
  api_token_hash: string;
  api_token_enc: string;
  created_at: string;
  updated_at: string;
  /** 0/1 (migration 006): 1 and the client's invoices carry no tax. */
  tax_exempt: Generated<number>;
  /** Migration 006; null when the client gave none. */
  vat_number: string | null;
  /** When the client confirmed its e-mail address (migration 009); null until then. Optional on insert. */
  email_verified_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1 when the client signed itself up (migration 021): checkout then needs its billing country while tax applies. */
  self_signup: ColumnType<number, number | undefined, number>;
}

export interface ClientTables {
  clients: ClientTable;
}
