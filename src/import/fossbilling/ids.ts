// The mapping table (migration 031) as Kysely sees it. It belongs to the import alone, so its type is added here
// with withTables rather than to db/schema.ts, whose union is the modules' tables.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export interface FossbillingIdTable {
  kind: string;
  /** bigint: PostgreSQL answers it as a string (read it through Number()). */
  fb_id: number | string;
  tollgate_id: number;
  fingerprint: string;
  imported_at: string;
}

export type ImportDatabase = Database & { fossbilling_ids: FossbillingIdTable };

export function fossbillingIds(db: Kysely<Database>): Kysely<ImportDatabase> {
  return db.withTables<{ fossbilling_ids: FossbillingIdTable }>();
}
