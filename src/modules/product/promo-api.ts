// admin/product/promo_*: staff manage coupons (CONTRACT §8). Spread into the product module's admin actions.
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import { Done, Nullable, PageOf, Timestamp } from '../../platform/schemas.ts';
import { paginationParams } from '../../lib/paginator.ts';

import type { PromoService } from './promos.ts';

/** The services the coupon actions use. */
export interface PromoNeeds {
  promos: Pick<PromoService, 'create' | 'list' | 'get' | 'update' | 'delete'>;
}

const { adminAction } = actionsFor<PromoNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const PromoType = Type.Union([Type.Literal('percentage'), Type.Literal('absolute')]);
const Value = Type.Union([Type.String({ maxLength: 32 }), Type.Number()]);
const Moment = Type.String({ maxLength: 40 });

/** PromoRecord: `value` is a percent ("12.5") or an amount ("5.00"); null products/periods mean all of them. */
const Promo = Type.Object({
  id: Type.Integer(),
  code: Type.String(),
  type: PromoType,
  value: Type.String(),
  products: Nullable(Type.Array(Type.Integer())),
  periods: Nullable(Type.Array(Type.String())),
  max_uses: Nullable(Type.Integer()),
  used: Type.Integer(),
  once_per_client: Type.Boolean(),
  recurring: Type.Boolean(),
  active: Type.Boolean(),
  start_at: Nullable(Timestamp),
  end_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const fields = {
  products: Type.Optional(Type.Array(Id, { maxItems: 500 })),
  periods: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 8 }), { maxItems: 50 })),
  max_uses: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })),
  once_per_client: Type.Optional(Type.Boolean()),
  recurring: Type.Optional(Type.Boolean()),
  active: Type.Optional(Type.Boolean()),
  start_at: Type.Optional(Moment),
  end_at: Type.Optional(Moment),
};

export const promoActions = {
  promo_create: adminAction({
    params: Type.Object({ code: Type.String({ minLength: 1, maxLength: 64 }), type: PromoType, value: Value, ...fields }),
    permission: 'product.manage',
    summary: 'A coupon → id. value: percent for percentage, an amount for absolute; max_uses 0 = unlimited; duplicate code → 409',
    result: Type.Integer(),
    handler: (params, { services }) => services.promos.create(params),
  }),
  promo_get_list: adminAction({
    params: Type.Object({ search: Type.Optional(Type.String({ maxLength: 64 })), ...paginationParams }),
    permission: 'product.view',
    summary: 'Coupons, newest first; search matches a code exactly (any case)',
    result: PageOf(Promo),
    handler: (params, { services }) => services.promos.list(params),
  }),
  promo_get: adminAction({
    params: Type.Object({ id: Id }),
    permission: 'product.view',
    summary: 'One coupon with its use count',
    result: Promo,
    handler: ({ id }, { services }) => services.promos.get(id),
  }),
  promo_update: adminAction({
    params: Type.Object({
      id: Id,
      code: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      type: Type.Optional(PromoType),
      value: Type.Optional(Value),
      ...fields,
    }),
    permission: 'product.manage',
    summary: 'Changes a coupon; uses already counted stay counted',
    result: Done,
    async handler({ id, ...input }, { services }) {
      await services.promos.update(id, input);
      return true;
    },
  }),
  promo_delete: adminAction({
    params: Type.Object({ id: Id }),
    permission: 'product.manage',
    summary: 'Deletes a coupon; orders that had it renew without its discount',
    result: Done,
    async handler({ id }, { services }) {
      await services.promos.delete(id);
      return true;
    },
  }),
};
