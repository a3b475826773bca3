// The `apikey` product type: plugs the API key service into selling. Each hook runs inside the order's transaction.
import type { ProductType } from '../product/product-type.ts';
import { normalizeApiKeyConfig, readApiKeyConfig } from './options.ts';
import { normalizeUsageOptions, usageOptionsOf } from './usage-plan.ts';
import type { ApiKeyService } from './service.ts';

type Hooks = Pick<ApiKeyService, 'issue' | 'orderChanged' | 'orderDeleted' | 'serviceFields'>;

export function createApiKeyProductType(keys: Hooks): ProductType {
  const changed: ProductType['renew'] = (trx, order) => keys.orderChanged(trx, order);
  return {
    code: 'apikey',
    // The usage options (CONTRACT §12) are validated beside the key options and stored only when set.
    normalizeConfig: (config) => ({ ...normalizeApiKeyConfig(config), ...normalizeUsageOptions(config) }),
    publicConfig: (config) => ({ custom: readApiKeyConfig(config).custom, ...usageOptionsOf(config) }),
    // The key is issued on activation, not when the order is placed.
    create: async () => {},
    activate: (trx, order) => keys.issue(trx, order),
    renew: changed,
    suspend: changed,
    unsuspend: changed,
    cancel: changed,
    uncancel: changed,
    update: changed,
    delete: (trx, order) => keys.orderDeleted(trx, order),
    service: (trx, order) => keys.serviceFields(trx, order),
  };
}
