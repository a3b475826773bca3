// The order module's result schemas (CONTRACT §11): the order (OrderRecord; staff also see `notes`), its service
// fields, its history, a plan change and the products it may move to, as the services build them.
import { Type, type TProperties } from '@sinclair/typebox';
import { Money, Nullable, PageOf, Timestamp } from '../../platform/schemas.ts';
import { UsageSummary } from '../serviceapikey/key-results.ts';

const OrderStatus = Type.Union(['pending_setup', 'failed_setup', 'active', 'suspended', 'canceled'].map((status) => Type.Literal(status)));
const Period = (description: string) => Nullable(Type.String({ description }));

const orderFields = {
  id: Type.Integer(),
  client_id: Type.Integer(),
  product_id: Type.Integer(),
  title: Type.String(),
  type: Type.String({ description: 'The product type, e.g. `serviceapikey`' }),
  period: Period('Billing period code (`1M`, `1Y`…); null for a one-time order'),
  quantity: Type.Integer(),
  price: Type.String({ ...Money, description: 'Price of one unit per period' }),
  currency: Type.String(),
  status: OrderStatus,
  reason: Nullable(Type.String({ description: 'Why it was suspended or canceled' })),
  expires_at: Nullable(Timestamp),
  activated_at: Nullable(Timestamp),
  suspended_at: Nullable(Timestamp),
  canceled_at: Nullable(Timestamp),
  unpaid_invoice_id: Nullable(Type.Integer({ description: 'An unpaid invoice of this order' })),
  cancel_at_period_end: Type.Boolean({ description: 'Canceled by the client: the order ends at expires_at' }),
  next_product_id: Nullable(Type.Integer({ description: 'A downgrade waiting for the next renewal' })),
  next_period: Period('The period the order renews on after a downgrade'),
  trial_ends_at: Nullable(Type.String({ format: 'date-time', description: 'The end of the free trial the order started on; null: it had none' })),
  on_trial: Type.Boolean({ description: 'True while the free trial runs (nothing paid yet)' }),
  trial_awaiting_card: Type.Boolean({ description: 'True while the free trial waits for the client to save a card (client/payment_method/setup); the order is pending until then' }),
  usage_terms: Nullable(Type.String({ description: "The plan's usage terms in words: included calls, overage price, limits (null: none)" })),
  created_at: Timestamp,
  updated_at: Timestamp,
} satisfies TProperties;

/** An order as its client sees it. */
export const Order = Type.Object(orderFields, { $id: 'Order' });

/** An order as staff see it: with staff notes. */
export const AdminOrder = Type.Object(
  { ...orderFields, notes: Nullable(Type.String({ description: 'Staff only' })), card_on_file: Type.Boolean({ description: 'Staff only: the client has a saved card (a trial ends by charging it)' }) },
  { $id: 'AdminOrder' },
);

/** An order as staff read it in a list: with whose it is (admin/order/get_list). */
export const StaffOrderListItem = Type.Object(
  { ...AdminOrder.properties, client_email: Nullable(Type.String()), client_name: Nullable(Type.String()) },
  { $id: 'StaffOrderListItem' },
);

export const StaffOrderPage = PageOf(StaffOrderListItem);

/**
 * The fields an API key order adds to order/service. Other product types add their own (product types are plugins),
 * so the service object stays open. The key's `reason` replaces the order's own `reason` there.
 */
const apiKeyServiceFields = {
  api_key: Type.Optional(Nullable(Type.String({ description: 'API key orders: the key; null before it is issued, or for staff without serviceapikey.manage' }))),
  config: Type.Optional(Nullable(Type.Object({}, { additionalProperties: true, description: 'API key orders: the key’s custom parameters' }))),
  valid: Type.Optional(Type.Union([Type.Literal(0), Type.Literal(1)], { description: 'API key orders: the validity switch (FOSSBilling’s 0/1)' })),
  max_keys: Type.Optional(Type.Integer({ minimum: 1, description: 'API key orders, once issued: the keys the order may hold' })),
  // API key orders: this period's use as get_info shows it (the built-in calls meter, the plan's meters, the limit
  // reached); null before the key is issued.
  usage: Type.Optional(Nullable(UsageSummary)),
  reason: Nullable(
    Type.String({
      description:
        'Why the order was suspended or canceled; for an API key order, whether a check would accept the key now and why not (VALID, NOT_FOUND, DISABLED, CLIENT_INACTIVE, NOT_ACTIVE, EXPIRED, LIMIT_EXCEEDED, TRIAL_ENDED)',
    }),
  ),
} satisfies TProperties;

const typeFields = { additionalProperties: true, description: "The order with the fields its product type adds (`serviceapikey`: the key and its state)" };
export const OrderService = Type.Object({ ...orderFields, ...apiKeyServiceFields }, { ...typeFields, $id: 'OrderService' });
export const AdminOrderService = Type.Object({ ...AdminOrder.properties, ...apiKeyServiceFields }, { ...typeFields, $id: 'AdminOrderService' });

export const OrderHistoryEntry = Type.Object(
  {
    from_status: Nullable(OrderStatus),
    to_status: OrderStatus,
    note: Nullable(Type.String()),
    created_at: Timestamp,
  },
  { $id: 'OrderHistoryEntry' },
);

export const PlanChange = Type.Object(
  {
    change: Type.Union([Type.Literal('upgrade'), Type.Literal('downgrade')]),
    effective: Type.Union([Type.Literal('now'), Type.Literal('on_payment'), Type.Literal('at_renewal')], {
      description: '`now` when nothing is owed, `on_payment` when the invoice is paid, `at_renewal` for a downgrade',
    }),
    invoice_id: Nullable(Type.Integer({ description: 'The prorated invoice of an upgrade' })),
    credit: Type.String({ ...Money, description: 'The unused part of the current period credited against the upgrade' }),
    amount: Type.String({ ...Money, description: 'What is charged' }),
  },
  { $id: 'PlanChange' },
);

const PriceEntry = Type.Object({ price: Money, setup: Money });

/** A product on sale, as the catalogue shows it (PublicProduct). */
export const UpgradableProduct = Type.Object(
  {
    id: Type.Integer(),
    title: Type.String(),
    slug: Type.String(),
    description: Nullable(Type.String()),
    type: Type.String(),
    pricing: Type.Object({
      type: Type.Union([Type.Literal('free'), Type.Literal('once'), Type.Literal('recurrent')]),
      once: PriceEntry,
      recurrent: Type.Object({}, { additionalProperties: Type.Object({ ...PriceEntry.properties, enabled: Type.Boolean() }), description: 'By period code' }),
    }),
    config: Type.Object({}, { additionalProperties: true, description: 'The product type’s settings' }),
    currency: Type.String({ description: "The order's currency: the prices are in it (issue 26)" }),
  },
  { $id: 'UpgradableProduct' },
);
