// The `custom` product type: no service behind it. Its config is free-form except `custom`, the public parameters
// shown in the catalogue.
import { errors } from '../../platform/errors.ts';
import type { ProductType } from './product-type.ts';

const noop = async (): Promise<void> => {};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const customType: ProductType = {
  code: 'custom',
  normalizeConfig(config) {
    if (config.custom !== undefined && !isPlainObject(config.custom)) throw errors.invalid('config.custom', 'must be an object');
    return config;
  },
  publicConfig(config) {
    return { custom: isPlainObject(config.custom) ? config.custom : {} };
  },
  create: noop,
  activate: noop,
  renew: noop,
  suspend: noop,
  unsuspend: noop,
  cancel: noop,
  uncancel: noop,
  update: noop,
  delete: noop,
  async service() {
    return null;
  },
};
