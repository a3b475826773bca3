// product: the catalogue. Staff prepare, price, configure and enable products; guests read enabled ones.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { Done, Money, PageOf, Timestamp, Nullable } from '../../platform/schemas.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { PricingParam } from './pricing-params.ts';
import { promoActions, type PromoNeeds } from './promo-api.ts';
import type { ProductService } from './service.ts';

/** The services the product module's actions use (the coupons': promo-api.ts). */
export interface ProductNeeds extends PromoNeeds {
  products: Pick<ProductService, 'prepare' | 'list' | 'get' | 'update' | 'updateConfig' | 'delete' | 'publicList' | 'publicGet'>;
}

const { adminAction, guestAction } = actionsFor<ProductNeeds>();

export const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Title = Type.String({ minLength: 1, maxLength: 255 });
const Status = Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]);
const Setup = Type.Union([Type.Literal('after_order'), Type.Literal('after_payment'), Type.Literal('manual')]);
const Config = Type.Record(Type.String({ maxLength: 128 }), Type.Unknown());

/** PricingView: amounts as decimal strings; period code → price, setup fee and whether it is offered. */
export const PricingSchema = Type.Object({
  type: Type.Union([Type.Literal('free'), Type.Literal('once'), Type.Literal('recurrent')]),
  once: Type.Object({ price: Money, setup: Money }),
  recurrent: Type.Record(Type.String(), Type.Object({ price: Money, setup: Money, enabled: Type.Boolean() })),
});
/** An amount pair in another currency (product/currency-prices.ts). */
const PricePair = Type.Object({ price: Money, setup: Money });
/** The admin's pricing: the default prices and the own prices staff set per other currency. */
const AdminPricingSchema = Type.Object({
  ...PricingSchema.properties,
  prices: Type.Record(Type.String({ description: 'ISO 4217 code' }), Type.Object({ once: Nullable(PricePair), recurrent: Type.Record(Type.String(), PricePair) }), {
    description: 'Own prices per currency; a currency or period without one converts the default price at the current rate',
  }),
});
/** A product as staff see it (ProductRecord). */
const ProductRecord = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  slug: Type.String(),
  description: Nullable(Type.String()),
  type: Type.String(),
  status: Status,
  hidden: Type.Boolean(),
  setup: Setup,
  pricing: AdminPricingSchema,
  config: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** A catalogue product (PublicProduct): enabled periods only, the product type's public config only. */
export const PublicProductSchema = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  slug: Type.String(),
  description: Nullable(Type.String()),
  type: Type.String(),
  pricing: PricingSchema,
  config: Type.Record(Type.String(), Type.Unknown()),
  currency: Type.String({ description: 'ISO 4217 code the prices are in' }),
});

/** `currency` of a catalogue read: one of the instance's currencies (guest/currency/get_pairs), else the default. */
const CatalogueCurrency = Type.Optional(Type.String({ minLength: 3, maxLength: 3, description: 'Show prices in this currency (default: the default currency)' }));

export const productApi: ModuleApi<ProductNeeds> = {
  name: 'product',
  admin: {
    ...promoActions,
    prepare: adminAction({
      params: Type.Object({ title: Title, type: Type.String({ minLength: 1, maxLength: 32 }) }),
      permission: 'product.manage',
      summary: 'Creates a disabled, free product of a registered type (custom, apikey…) → its id',
      result: Type.Integer(),
      handler: ({ title, type }, { services }) => services.products.prepare(title, type),
    }),
    update: adminAction({
      params: Type.Object({
        id: Id,
        title: Type.Optional(Title),
        slug: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
        description: Type.Optional(Type.String({ maxLength: 10_000 })),
        status: Type.Optional(Status),
        hidden: Type.Optional(Type.Boolean()),
        setup: Type.Optional(Setup),
        pricing: Type.Optional(PricingParam),
        config: Type.Optional(Config),
      }),
      permission: 'product.manage',
      summary: 'Changes a product; `config` is merged into the stored one',
      result: Done,
      async handler({ id, ...fields }, { services }) {
        await services.products.update(id, fields);
        return true;
      },
    }),
    update_config: adminAction({
      params: Type.Object({ id: Id, config: Config }),
      permission: 'product.manage',
      summary: "Replaces a product's config",
      result: Done,
      async handler({ id, config }, { services }) {
        await services.products.updateConfig(id, config);
        return true;
      },
    }),
    get: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'product.view',
      summary: 'One product with its pricing and whole config',
      result: ProductRecord,
      handler: ({ id }, { services }) => services.products.get(id),
    }),
    get_list: adminAction({
      params: Type.Object({
        type: Type.Optional(Type.String({ maxLength: 32 })),
        status: Type.Optional(Status),
        search: Type.Optional(Type.String({ maxLength: 255 })),
        ...paginationParams,
      }),
      permission: 'product.view',
      summary: 'Products, oldest first; search matches the title or slug',
      result: PageOf(ProductRecord),
      handler: (params, { services }) => services.products.list(params),
    }),
    delete: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'product.manage',
      summary: 'Deletes a product that no order uses (409 otherwise)',
      result: Done,
      async handler({ id }, { services }) {
        await services.products.delete(id);
        return true;
      },
    }),
  },
  guest: {
    get_list: guestAction({
      params: Type.Object({ ...paginationParams, currency: CatalogueCurrency }),
      summary: 'Enabled, listed products with their pricing (in `currency`, else the default) and public config',
      result: PageOf(PublicProductSchema),
      handler: (params, { services }) => services.products.publicList(params),
    }),
    get: guestAction({
      params: Type.Object({ id: Type.Optional(Id), slug: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), currency: CatalogueCurrency }),
      summary: 'One enabled product by id or slug',
      result: PublicProductSchema,
      handler: (params, { services }) => services.products.publicGet(params),
    }),
  },
};
