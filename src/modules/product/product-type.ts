// How a kind of product plugs into selling. The order service calls these hooks inside the same database transaction
// as the order's own change, after the order row has its new state, so a hook that throws undoes the whole change.
// `custom` (no service) and `apikey` implement this interface; adding a product type is one more implementation
// registered in the product type registry, nothing else.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export type OrderStatus = 'pending_setup' | 'failed_setup' | 'active' | 'suspended' | 'canceled';

/** The order as product types see it, after the change being reported. */
export interface OrderSnapshot {
  id: number;
  client_id: number;
  product_id: number;
  period: string | null;
  quantity: number;
  status: OrderStatus;
  /** ISO 8601 UTC, or null for products that never expire. */
  expires_at: string | null;
  /** The product's config as it was when the order was created (or activated, for the first activation). */
  config: Record<string, unknown>;
}

export type OrderHook = (trx: Kysely<Database>, order: OrderSnapshot) => Promise<void>;

export interface ProductType {
  /** The `type` of products of this kind, e.g. 'custom' or 'apikey'. */
  readonly code: string;
  /**
   * Validates and normalises a product's `config` when the product is saved. Throws
   * `errors.invalid('config.<option>', '…')` for a bad option; returns what is stored.
   */
  normalizeConfig(config: Record<string, unknown>): Record<string, unknown>;
  /** The part of the config that guests may see in the catalogue (CONTRACT: `config.custom`, nothing else). */
  publicConfig(config: Record<string, unknown>): Record<string, unknown>;
  create: OrderHook;
  activate: OrderHook;
  renew: OrderHook;
  suspend: OrderHook;
  unsuspend: OrderHook;
  cancel: OrderHook;
  uncancel: OrderHook;
  /** Staff changed the order's period, expiry or price (admin/order/update). */
  update: OrderHook;
  /** Runs before the order row is deleted. */
  delete: OrderHook;
  /** Extra fields merged into `order/service` for this order, or null when the type has none. */
  service(trx: Kysely<Database>, order: OrderSnapshot): Promise<Record<string, unknown> | null>;
}
