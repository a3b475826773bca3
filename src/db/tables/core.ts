// Tables of the platform core: staff and their groups, clients, sessions.
import type { ColumnType, Generated } from 'kysely';

export interface AdminGroupTable {
  id: Generated<number>;
  name: string;
  /** JSON array of permission strings (`client.view`, …); group 1 may do everything regardless. */
  permissions: string;
  created_at: string;
  updated_at: string;
}

export interface StaffTable {
  id: Generated<number>;
  /** Stored lower-cased; unique. */
  email: string;
  name: string;
  password_hash: string;
  status: 'active' | 'inactive';
  admin_group_id: number;
  /** HMAC of the API token (lookup) and its AES-GCM sealed copy (shown to its owner). */
  api_token_hash: string;
  api_token_enc: string;
  created_at: string;
  updated_at: string;
}

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
  /** When the client confirmed its e-mail address (migration 009); null until then. Optional on insert. */
  email_verified_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1 when the client signed itself up (migration 021): checkout then needs its billing country while tax applies. */
  self_signup: ColumnType<number, number | undefined, number>;
}

export interface SessionTable {
  /** HMAC of the session id sent in the cookie: a database dump does not yield usable session ids. */
  id_hash: string;
  /** HMAC of the session's CSRF token. */
  csrf_hash: string;
  subject_type: 'guest' | 'client' | 'admin';
  subject_id: number | null;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

export interface CoreTables {
  admin_groups: AdminGroupTable;
  staff: StaffTable;
  clients: ClientTable;
  sessions: SessionTable;
}
