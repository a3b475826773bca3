// The order record's result schema (CONTRACT §6 "orders", §11): what admin/order/get_list answers for each order.
import { Type } from '@sinclair/typebox';
import { Money, Nullable, PageOf, Timestamp } from '../../http/result-schemas.ts';

const Text = Type.String();

/** An order as staff read it in a list: the record, staff notes, and whose it is. */
export const StaffOrderListItem = Type.Object({
  id: Type.Integer(),
  client_id: Type.Integer(),
  product_id: Type.Integer(),
  title: Text,
  type: Text,
  period: Nullable(Text),
  quantity: Type.Integer(),
  price: Money,
  currency: Text,
  status: Type.Union(['pending_setup', 'failed_setup', 'active', 'suspended', 'canceled'].map((status) => Type.Literal(status))),
  reason: Nullable(Text),
  expires_at: Nullable(Timestamp),
  activated_at: Nullable(Timestamp),
  suspended_at: Nullable(Timestamp),
  canceled_at: Nullable(Timestamp),
  unpaid_invoice_id: Nullable(Type.Integer()),
  cancel_at_period_end: Type.Boolean(),
  next_product_id: Nullable(Type.Integer()),
  next_period: Nullable(Text),
  created_at: Timestamp,
  updated_at: Timestamp,
  notes: Nullable(Text),
  client_email: Nullable(Text),
  client_name: Nullable(Text),
});

export const StaffOrderPage = PageOf(StaffOrderListItem);
