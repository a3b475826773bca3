// Tables of the staff module: staff members and their groups. Only this module writes them.
import type { Generated } from 'kysely';

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

export interface StaffTables {
  admin_groups: AdminGroupTable;
  staff: StaffTable;
}
