// Tables of the API key product: the keys (one per order) and their usage counts per day.
import type { Generated } from 'kysely';

export interface ApiKeyTable {
  id: Generated<number>;
  /** The order that owns the key; unique: one key per order. */
  order_id: number;
  client_id: number;
  /** HMAC-SHA256 of the key under the instance secret (lookup); unique, so keys are unique across the instance. */
  key_hash: string;
  /** The key sealed with AES-256-GCM under the instance secret, so its owner can read it again. */
  key_enc: string;
  /** 0/1: the administrator's switch. */
  valid: number;
  /** JSON: the key options the key was issued with ({length, split, split_interval, capitalization, enforce_limit}). */
  options: string;
  /** JSON object: the key's custom parameters. */
  config: string;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyUsageTable {
  api_key_id: number;
  /** Calendar day in UTC, `YYYY-MM-DD`. */
  day: string;
  count: number;
}

export interface ApiKeyTables {
  api_keys: ApiKeyTable;
  api_key_usage: ApiKeyUsageTable;
}
