// The purchase flow with the fetch client orval generates (base URL set in its config): the same steps as
// openapi-fetch.ts, no casts. Answers are narrowed by their status.
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
} from './orval/api.ts';
import { basic, fail, type FlowInput, type FlowOutcome } from './shared.ts';

export async function purchase({ clientToken, adminToken }: FlowInput): Promise<FlowOutcome> {
  const staff = { headers: { authorization: basic('admin', adminToken) } };
  const client = { headers: { authorization: basic('client', clientToken) } };

  const prepared = await adminProductPrepare({ title: 'Generated plan (orval)', type: 'apikey' }, staff);
  if (prepared.status !== 200) return fail('prepare', prepared.data);
  const productId: number = prepared.data.result;
  const priced = await adminProductUpdate(
    { id: productId, status: 'enabled', pricing: { type: 'recurrent', recurrent: { '1M': { price: '12.50', setup: 0, enabled: 1 } } } },
    staff,
  );
  if (priced.status !== 200) return fail('update', priced.data);
  // @ts-expect-error a misspelt pricing key is refused by the document as by the server
  void adminProductUpdate({ id: productId, pricing: { tpye: 'once' } }, staff);

  const catalogue = await guestProductGetList({ per_page: 100 });
  if (catalogue.status !== 200) return fail('catalogue', catalogue.data);
  const plan = catalogue.data.result.list.find((product) => product.id === productId);
  const price: string | undefined = plan?.pricing.recurrent['1M']?.price;
  if (plan === undefined || price !== '12.50') return fail('catalogue', catalogue.data);

  await clientCartReset(client);
  const added = await clientCartAddItem({ id: plan.id, period: '1M', multiple: 0 }, client);
  if (added.status !== 200) return fail('add_item', added.data);
  const checkout = await clientCartCheckout({}, client);
  if (checkout.status !== 200) return fail('checkout', checkout.data);
  const invoiceId = checkout.data.result.invoice_id;
  if (invoiceId === null) return fail('checkout', checkout.data);
  const invoice = await clientInvoiceGet({ id: invoiceId }, client);
  if (invoice.status !== 200) return fail('invoice', invoice.data);
  const total: string = invoice.data.result.total;

  const paid = await adminInvoiceMarkAsPaid({ id: invoiceId, execute: true }, staff);
  if (paid.status !== 200) return fail('mark_as_paid', paid.data);
  const keys = await clientServiceapikeyGetList({ order_id: checkout.data.result.order_id }, client);
  if (keys.status !== 200) return fail('keys', keys.data);
  const key = keys.data.result.list[0]?.api_key;
  if (key === undefined) return fail('keys', keys.data);
  const before = await guestServiceapikeyCheck({ key });
  const disabled = await adminServiceapikeyUpdate({ order_id: checkout.data.result.order_id, valid: 0 }, staff);
  if (disabled.status !== 200) return fail('disable', disabled.data);
  const after = await guestServiceapikeyCheck({ key });
  return { total, validAfterPayment: before.status === 200 && before.data.result, validAfterDisable: after.status === 200 && after.data.result };
}
