// Shapes of the API's results (CONTRACT §6–7) as the pages use them, named once. They are the OpenAPI document's types
// (api-schema.ts, generated from the server's schemas), so the pages and the API cannot drift apart.
import type { components } from './api-schema.ts';
import type { ListItem, Result } from './actions.ts';

type Schemas = components['schemas'];

export type Cart = Schemas['Cart'];
export type CartItem = Schemas['CartItem'];
export type CheckoutResult = Schemas['CheckoutResult'];
export type ClientRecord = Schemas['Client'];
export type Invoice = Schemas['Invoice'];
export type InvoiceItem = Schemas['InvoiceItem'];
/** An order as its client sees it. */
export type Order = Schemas['Order'];
/** An order as staff see it: the order page, and a row of the staff's order list. */
export type AdminOrder = Schemas['AdminOrder'];
export type StaffOrderListItem = Schemas['StaffOrderListItem'];
export type StaffInvoiceListItem = Schemas['StaffInvoiceListItem'];
export type Gateway = Schemas['Gateway'];
export type TaxRecord = Schemas['TaxRule'];
export type PromoRecord = Result<'admin/product/promo_get'>;
export type StaffRecord = Result<'admin/profile/get'>;
export type AdminGroup = ListItem<'admin/staff/group_get_list'>;
/** A key of an order, as its client lists it. */
export type ApiKey = ListItem<'client/serviceapikey/get_list'>;
export type KeyInfo = Result<'guest/serviceapikey/get_info'>;
export type Usage = Result<'client/serviceapikey/usage'>;
export type KeyUsage = NonNullable<KeyInfo['usage']>;
export type LoginResult = Result<'guest/client/login'>;
export type TransactionRecord = Schemas['Transaction'];
export type WebhookRecord = ListItem<'admin/webhook/get_list'>;
export type DeliveryRecord = ListItem<'admin/webhook/delivery_get_list'>;
export type AttemptRecord = Result<'admin/webhook/delivery_get'>['attempt_log'][number];
export type EmailRecord = Schemas['Email'];
export type TemplateRecord = Schemas['EmailTemplate'];
export type ClientEmailRecord = Schemas['ClientEmail'];
export type VerifierRecord = ListItem<'admin/staff/verifier_get_list'>;
export type PaymentMethodRecord = Result<'client/payment_method/get_list'>[number];
export type Product = ListItem<'admin/product/get_list'>;
export type Pricing = Product['pricing'];
export type PeriodPrice = NonNullable<Pricing['recurrent']>[string];

/** `true`/1 → true. */
export function truthy(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 'true';
}

/** First and last day (YYYY-MM-DD) of the current UTC month: the default usage period. */
export function currentPeriod(now = new Date()): { from: string; to: string } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0));
  return { from: start.toISOString().slice(0, 10), to: end.toISOString().slice(0, 10) };
}
