// The purchase flow with the SDK @hey-api/openapi-ts generates (its bundled fetch client): the same steps as
// openapi-fetch.ts, no casts.
import { createClient, createConfig } from './hey-api/client/index.ts';
import {
  adminInvoiceMarkAsPaid,
  adminProductPrepare,
  adminProductUpdate,
  adminServiceapikeyUpdate,
  clientCartAddItem,
  clientCartCheckout,
  clientCartReset,
  clientInvoiceGet,
  clientServiceapikeyGetList,
  guestProductGetList,
  guestServiceapikeyCheck,
} from './hey-api/sdk.gen.ts';
import { basic, fail, type FlowInput, type FlowOutcome } from './shared.ts';

export async function purchase({ baseUrl, clientToken, adminToken }: FlowInput): Promise<FlowOutcome> {
  const staff = createClient(createConfig({ baseUrl, headers: { authorization: basic('admin', adminToken) } }));
  const client = createClient(createConfig({ baseUrl, headers: { authorization: basic('client', clientToken) } }));
  const guest = createClient(createConfig({ baseUrl }));

  const prepared = await adminProductPrepare({ client: staff, body: { title: 'Generated plan (hey-api)', type: 'apikey' } });
  if (prepared.data === undefined) return fail('prepare', prepared.error);
  const productId: number = prepared.data.result;
  const priced = await adminProductUpdate({
    client: staff,
    body: { id: productId, status: 'enabled', pricing: { type: 'recurrent', recurrent: { '1M': { price: '12.50', setup: 0, enabled: 1 } } } },
  });
  if (priced.error !== undefined) return fail('update', priced.error);
  // @ts-expect-error a misspelt pricing key is refused by the document as by the server
  void adminProductUpdate({ client: staff, body: { id: productId, pricing: { tpye: 'once' } } });

  const catalogue = await guestProductGetList({ client: guest, body: { per_page: 100 } });
  if (catalogue.data === undefined) return fail('catalogue', catalogue.error);
  const plan = catalogue.data.result.list.find((product) => product.id === productId);
  const price: string | undefined = plan?.pricing.recurrent['1M']?.price;
  if (plan === undefined || price !== '12.50') return fail('catalogue', catalogue.data);

  await clientCartReset({ client });
  const added = await clientCartAddItem({ client, body: { id: plan.id, period: '1M', multiple: 0 } });
  if (added.error !== undefined) return fail('add_item', added.error);
  const checkout = await clientCartCheckout({ client, body: {} });
  if (checkout.data === undefined) return fail('checkout', checkout.error);
  const invoiceId = checkout.data.result.invoice_id;
  if (invoiceId === null) return fail('checkout', checkout.data);
  const invoice = await clientInvoiceGet({ client, body: { id: invoiceId } });
  if (invoice.data === undefined) return fail('invoice', invoice.error);
  const total: string = invoice.data.result.total;

  const paid = await adminInvoiceMarkAsPaid({ client: staff, body: { id: invoiceId, execute: true } });
  if (paid.error !== undefined) return fail('mark_as_paid', paid.error);
  const keys = await clientServiceapikeyGetList({ client, body: { order_id: checkout.data.result.order_id } });
  const key = keys.data?.result.list[0]?.api_key;
  if (key === undefined) return fail('keys', keys.error);
  const before = await guestServiceapikeyCheck({ client: guest, body: { key } });
  const disabled = await adminServiceapikeyUpdate({ client: staff, body: { order_id: checkout.data.result.order_id, valid: 0 } });
  if (disabled.error !== undefined) return fail('disable', disabled.error);
  const after = await guestServiceapikeyCheck({ client: guest, body: { key } });
  return { total, validAfterPayment: before.data?.result === true, validAfterDisable: after.data?.result === true };
}
