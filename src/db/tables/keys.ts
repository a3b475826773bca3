// Columns migration 014 adds to `api_keys` (several keys per order, rotation with a grace period); intersected with
// ApiKeyTables in schema.ts.

export interface ApiKeyExtraColumns {
  /** The name its owner gave the key (null: none). */
  name: string | null;
  /** HMAC of the key this one replaced, still validating until `grace_until` (a reset with grace_seconds). */
  grace_hash: string | null;
  grace_until: string | null;
  /** When the key was deleted (it stops validating; its uses stay counted for the order). */
  deleted_at: string | null;
}

export interface KeysTables {
  api_keys: ApiKeyExtraColumns;
}
