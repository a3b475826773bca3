// The `apikey` product type: plugs the API key service into selling. Each hook runs inside the order's transaction.
import type { ProductType } from '../product/product-type.ts';
import { normalizeApiKeyConfig, readApiKeyConfig } from './options.ts';
import { normalizeUsageOptions, usageOptionsOf, type UsageOptions } from './usage/usage-plan.ts';
import type { ApiKeyService } from './service.ts';
import { moveOpenPeriod } from './usage/period-move.ts';

type Hooks = Pick<ApiKeyService, 'issue' | 'orderChanged' | 'orderDeleted' | 'serviceFields'>;

/**
 * A plan priced by use (it sets `included`, `overage`, `hard_limit` or `meters`) counts by its billing period unless it says
 * otherwise: usage aligned with what the buyer pays for, as Lago and Stripe do (issue 21 item 5). A plan with only
 * FOSSBilling's `monthlyLimit` keeps the calendar month of CONTRACT §7.1. Plans saved before this default were given
 * their calendar month explicitly by migration 021.
 */
export function withPeriodDefault(options: UsageOptions): UsageOptions {
  if (options.usage_period !== undefined) return options;
  const metered = options.included !== undefined || options.overage !== undefined || options.hard_limit !== undefined || options.meters !== undefined;
  return metered ? { ...options, usage_period: 'billing_period' } : options;
}

export function createApiKeyProductType(keys: Hooks): ProductType {
  const changed: ProductType['renew'] = (trx, order) => keys.orderChanged(trx, order);
  // The order's period may have moved (staff changed expires_at, a renewal or plan change started a new period): the
  // open billing_period usage period ends with it (period-move.ts), before the keys' cached records are dropped.
  const periodMoved: ProductType['renew'] = async (trx, order) => {
    await moveOpenPeriod(trx, order);
    await keys.orderChanged(trx, order);
  };
  return {
    code: 'apikey',
    // The usage options (CONTRACT §12) are validated beside the key options and stored only when set.
    normalizeConfig: (config) => ({ ...normalizeApiKeyConfig(config), ...withPeriodDefault(normalizeUsageOptions(config)) }),
    // What a buyer may read before paying (issue 21 item 3): the custom parameters and the plan's usage terms — the
    // usage options, the quota's enforcement, the per-key rate limit and the keys an order may hold; each only when
    // the plan sets it (like the usage options), so a plain plan still shows `{custom}`. Never the key options.
    publicConfig: (config) => {
      const { custom, enforce_limit: enforce, rate_limit: rate, max_keys: allowed } = readApiKeyConfig(config);
      return { custom, ...usageOptionsOf(config), ...(enforce && { enforce_limit: true }), ...(rate !== null && { rate_limit: rate }), ...(allowed > 1 && { max_keys: allowed }) };
    },
    // The key is issued on activation, not when the order is placed.
    create: async () => {},
    activate: (trx, order) => keys.issue(trx, order),
    renew: periodMoved,
    suspend: changed,
    unsuspend: changed,
    cancel: changed,
    uncancel: changed,
    update: periodMoved,
    delete: (trx, order) => keys.orderDeleted(trx, order),
    service: (trx, order) => keys.serviceFields(trx, order),
  };
}
