// The cart's result schemas (CONTRACT §11): what cart/get and cart/checkout answer (CartView, CheckoutResult).
import { Type } from '@sinclair/typebox';
import { Money, Nullable } from '../../platform/schemas.ts';

const CartItem = Type.Object(
  {
    id: Type.Integer({ description: 'The cart line (cart/remove_item takes it)' }),
    product_id: Type.Integer(),
    title: Type.String(),
    type: Type.String({ description: 'The product type, e.g. `serviceapikey`' }),
    period: Nullable(Type.String({ description: 'Billing period code (`1M`, `1Y`…); null for a one-time price' })),
    quantity: Type.Integer({ minimum: 1 }),
    price: Money,
    setup_price: Money,
    total: Money,
    usage_terms: Nullable(Type.String({ description: "The plan's usage terms in words: included calls, overage price, limits (null: none)" })),
  },
  { $id: 'CartItem' },
);

export const Cart = Type.Object(
  {
    items: Type.Array(CartItem),
    subtotal: Money,
    promocode: Nullable(Type.String({ description: 'The applied coupon' })),
    discount: Money,
    total: Type.String({ ...Money, description: 'subtotal − discount; taxes are added on the invoice' }),
    currency: Type.String({ description: 'ISO 4217 code' }),
  },
  { $id: 'Cart' },
);

export const CheckoutResult = Type.Object(
  {
    order_id: Type.Integer({ description: 'The first order placed' }),
    orders: Type.Array(Type.Integer(), { description: 'Every order placed, one per cart line' }),
    invoice_id: Nullable(Type.Integer({ description: 'The unpaid invoice; null when nothing is owed' })),
    invoice_hash: Nullable(Type.String({ description: 'Opens the invoice as a guest (guest/invoice/get)' })),
    setup_url: Nullable(
      Type.String({ description: "A free trial that needs a card waits for one: where the client saves it (Stripe Checkout in setup mode); the trial starts when it is saved. Else null" }),
    ),
  },
  { $id: 'CheckoutResult' },
);
