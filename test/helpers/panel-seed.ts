// A small shop as an operator would have it after a week, for the panel's browser test and its screenshots: an API
// key plan and a plan without a key, a customer with an address, a paid order (the payment carrying the reference
// staff typed), an unpaid one, and a staff group. Made through the admin API, as staff would.
import { expect } from 'vitest';
import type { TestApp } from './app.ts';

export interface PanelShop {
  keyPlan: number;
  supportPlan: number;
  customer: { id: number; email: string; password: string; token: string };
  paidOrder: number;
  paidInvoice: number;
  unpaidInvoice: number;
  key: string;
  bankReference: string;
}

async function ok(reply: Promise<{ body: { error: unknown }; result: unknown }>): Promise<unknown> {
  const answered = await reply;
  expect(answered.body.error).toBeNull();
  return answered.result;
}

export async function seedShop(t: TestApp): Promise<PanelShop> {
  await ok(t.admin('system/settings_update', { company_name: 'Acme API Ltd', company_address_1: '1 Invoice Road', company_city: 'Berlin', company_country: 'DE', invoice_prefix: 'ACME-' }));
  const keyPlan = (await ok(t.admin('product/prepare', { title: 'Pro API', type: 'apikey' }))) as number;
  await ok(
    t.admin('product/update', {
      id: keyPlan,
      status: 'enabled',
      setup: 'after_payment',
      description: 'For production apps.',
      pricing: { type: 'recurrent', recurrent: { '1M': { price: '19.00', setup: '0', enabled: true }, '1Y': { price: '190.00', setup: '0', enabled: true } } },
      config: { custom: { tier: 'pro', monthlyLimit: 1000 } },
    }),
  );
  const supportPlan = (await ok(t.admin('product/prepare', { title: 'Support hours', type: 'custom' }))) as number;
  await ok(t.admin('product/update', { id: supportPlan, status: 'enabled', description: 'Ten hours with an engineer.', pricing: { type: 'once', once: { price: '500.00', setup: '0' } } }));

  const customer = await t.createClient({
    first_name: 'Ada',
    last_name: 'Lovelace',
    email: `ada-${Date.now()}@example.com`,
    company: 'Analytical Engines',
    address_1: '12 St James Square',
    city: 'London',
    postcode: 'SW1Y 4JH',
    country: 'GB',
  });
  const paidOrder = (await ok(t.admin('order/create', { client_id: customer.id, product_id: keyPlan, period: '1M', invoice_option: 'issue-invoice' }))) as number;
  const paidInvoice = ((await ok(t.admin('order/get', { id: paidOrder }))) as { unpaid_invoice_id: number }).unpaid_invoice_id;
  const bankReference = 'BANK-2026-0042';
  await ok(t.admin('invoice/mark_as_paid', { id: paidInvoice, transaction_id: bankReference }));
  await ok(t.admin('order/suspend', { id: paidOrder, reason: 'Card disputed' }));
  await ok(t.admin('order/unsuspend', { id: paidOrder }));
  const key = ((await ok(t.admin('serviceapikey/get', { order_id: paidOrder }))) as { api_key: string }).api_key;
  const unpaidOrder = (await ok(t.admin('order/create', { client_id: customer.id, product_id: supportPlan, invoice_option: 'issue-invoice' }))) as number;
  const unpaidInvoice = ((await ok(t.admin('order/get', { id: unpaidOrder }))) as { unpaid_invoice_id: number }).unpaid_invoice_id;
  await ok(t.admin('staff/group_create', { name: 'Billing desk', permissions: ['client.view', 'order.view', 'invoice.view'] }));
  return { keyPlan, supportPlan, customer, paidOrder, paidInvoice, unpaidInvoice, key, bankReference };
}
