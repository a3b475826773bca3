// Tables of the activity module: the audit log (migration 046). Only this module writes them; the log is
// append-only (database triggers refuse an UPDATE, and a DELETE outside the retention pruning).
import type { Generated } from 'kysely';

export type ActorType = 'staff' | 'api_token' | 'verifier' | 'system' | 'guest';

export interface ActivityLogTable {
  id: Generated<number>;
  created_at: string;
  priority: number;
  actor_type: ActorType;
  staff_id: number | null;
  staff_name: string | null;
  staff_email: string | null;
  ip: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  /** JSON array of `{field, from, to}`, or `{field, changed: true}` for a secret. */
  changes: string;
  message: string;
}

/** While a row is here (inside the pruning's transaction only), the triggers let DELETE through. */
export interface ActivityLogPruningTable {
  started_at: string;
}

export interface ActivityTables {
  activity_log: ActivityLogTable;
  activity_log_pruning: ActivityLogPruningTable;
}
