// The card's country as tax evidence (issue 26 item 2, docs/eu-vat.md "the evidence"): when Stripe reports the payment
// of an invoice taxed by the EU rules — a Checkout completion, a PaymentIntent event, an off-session renewal charge —
// the issuing country of the card (the charge's `payment_method_details.card.country`, read with `latest_charge`
// expanded) is added to the invoice's `tax_evidence`, once. A card from another country than the billing one sets
// `conflict` and changes no tax; a second report of the same payment fills it in only if the first could not tell; a
// late second payment with another card changes nothing. Against the local Stripe stand-in, on SQLite and, with
// TEST_DATABASE_URL and TEST_REDIS_URL, PostgreSQL + Redis.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';
import { deliver, purchase, startCardPayment, stripeStand, transactionsOf, type Purchase, type StripeStand } from '../../helpers/stripe-fixtures.ts';
import type { StripeEvent } from '../../helpers/stripe-server.ts';

describe('the card country as tax evidence', () => {
  let stand: StripeStand;
  let plan: number;

  beforeAll(async () => {
    stand = await stripeStand({ CURRENCY: 'EUR' });
    plan = await makeProduct(stand.t, { title: 'API plan' });
    // A German seller under the EU rules. Nobody here has a VAT number, so nothing asks VIES.
    const settings = await stand.t.admin('system/settings_update', { company_name: 'Seller GmbH', company_country: 'DE', company_vat_number: 'DE123456789', eu_vat: true });
    expect(settings.body.error).toBeNull();
  });
  afterAll(async () => {
    await stand.close();
  });
  beforeEach(() => {
    stand.stripe.failAll = false;
    stand.stripe.cardCountry = 'US';
  });

  const invoice = async (id: number) => (await stand.t.admin('invoice/get', { id })).result;
  const buyer = (country: string): Promise<Purchase> => stand.t.createClient({ country }).then((client) => purchase(stand.t, plan, client));
  /** Pays at the stand-in with a card issued in `cardCountry`; answers the two events Stripe sends, not yet delivered. */
  const pay = async (bought: Purchase, cardCountry: string): Promise<StripeEvent[]> => stand.stripe.completeSession(await startCardPayment(stand, bought.hash), { cardCountry });
  const intentReads = (intentId: string) => stand.stripe.requestsTo('GET', `/v1/payment_intents/${intentId}`);

  it('records the card country of a Checkout payment once, however often Stripe reports it', async () => {
    const bought = await buyer('FR');
    const events = await pay(bought, 'FR');
    for (const event of [...events, ...events]) expect((await deliver(stand, event)).status).toBe(200);
    const paid = await invoice(bought.invoiceId);
    expect(paid).toMatchObject({ status: 'paid', tax_rule: 'oss', tax_name: 'VAT FR', tax: '2.00', total: '12.00' });
    expect(paid.tax_evidence).toMatchObject({ billing_country: 'FR', ip_country: null, card_country: 'FR', place_of_supply: 'FR', conflict: false });
    expect(await transactionsOf(stand.t, bought.invoiceId)).toHaveLength(1);
    // Tollgate asked for the charge with the intent, which is where Stripe says the card's country.
    const intentId = (events[1]!.data.object as { id: string }).id;
    expect(intentReads(intentId).length).toBeGreaterThan(0);
    for (const read of intentReads(intentId)) expect(read.body).toMatchObject({ expand: ['latest_charge'] });
  });

  it('keeps the billing country deciding when the card names another one, and flags the conflict', async () => {
    const bought = await buyer('FR');
    for (const event of await pay(bought, 'US')) expect((await deliver(stand, event)).status).toBe(200);
    const paid = await invoice(bought.invoiceId);
    // Still French VAT: a card issued abroad is common; the address is what the buyer answers for.
    expect(paid).toMatchObject({ status: 'paid', tax_rule: 'oss', tax_name: 'VAT FR', tax_rate: '20', tax: '2.00', total: '12.00' });
    expect(paid.tax_evidence).toMatchObject({ billing_country: 'FR', card_country: 'US', place_of_supply: 'FR', conflict: true });
    // An export to a US company paid with a German card: no EU VAT still, the conflict recorded.
    const american = await buyer('US');
    for (const event of await pay(american, 'DE')) expect((await deliver(stand, event)).status).toBe(200);
    expect(await invoice(american.invoiceId)).toMatchObject({ tax_rule: 'export', tax: '0.00', tax_evidence: { billing_country: 'US', card_country: 'DE', conflict: true } });
  });

  it('applies a payment whose card Stripe could not tell, and fills the card in from the next report of that payment', async () => {
    // Without auto-pay no card is kept, so the PaymentIntent event asks Stripe for nothing but the card's country.
    const client = await stand.t.createClient({ country: 'BE' });
    expect((await asClient(stand.t, client.token, 'profile/update', { auto_pay: false })).body.error).toBeNull();
    const bought = await purchase(stand.t, plan, client);
    const [completed, succeeded] = await pay(bought, 'BE');
    // The PaymentIntent event arrives first, while Stripe's API fails: the payment is applied all the same.
    stand.stripe.failAll = true;
    expect((await deliver(stand, succeeded!)).status).toBe(200);
    const first = await invoice(bought.invoiceId);
    expect(first).toMatchObject({ status: 'paid', tax_rule: 'oss', tax_name: 'VAT BE', tax: '2.10' });
    expect(first.tax_evidence).toMatchObject({ card_country: null, conflict: false });
    // The Checkout completion comes once Stripe answers again: the same payment, now with its card.
    stand.stripe.failAll = false;
    expect((await deliver(stand, completed!)).status).toBe(200);
    expect((await invoice(bought.invoiceId)).tax_evidence).toMatchObject({ card_country: 'BE', place_of_supply: 'BE', conflict: false });
    expect(await transactionsOf(stand.t, bought.invoiceId)).toHaveLength(1);
  });

  it('leaves the evidence as the paying card made it when a second, late payment comes with another card', async () => {
    const bought = await buyer('FR');
    const firstSession = await startCardPayment(stand, bought.hash);
    const secondSession = await startCardPayment(stand, bought.hash);
    for (const event of stand.stripe.completeSession(firstSession, { cardCountry: 'FR' })) expect((await deliver(stand, event)).status).toBe(200);
    for (const event of stand.stripe.completeSession(secondSession, { cardCountry: 'IT' })) expect((await deliver(stand, event)).status).toBe(200);
    const paid = await invoice(bought.invoiceId);
    expect(paid.tax_evidence).toMatchObject({ card_country: 'FR', conflict: false });
    expect((await transactionsOf(stand.t, bought.invoiceId)).map((row) => row.status)).toEqual(['processed', 'error']);
  });

  it('records the saved card country of an off-session renewal charge, from the charge Stripe answers with', async () => {
    const bought = await buyer('IE');
    for (const event of await pay(bought, 'IE')) expect((await deliver(stand, event)).status).toBe(200);
    expect((await invoice(bought.invoiceId)).tax_evidence).toMatchObject({ card_country: 'IE', conflict: false });
    const renewal = await asClient(stand.t, bought.token, 'invoice/renewal_invoice', { order_id: bought.orderId });
    expect(renewal.body.error).toBeNull();
    const renewalId = renewal.result as number;
    expect((await invoice(renewalId)).tax_evidence).toMatchObject({ card_country: null });
    await stand.t.services.outbox.runDue(new Date());
    const charges = stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(renewalId));
    expect(charges).toMatchObject([{ body: { expand: ['latest_charge'], off_session: 'true' } }]);
    const renewed = await invoice(renewalId);
    expect(renewed).toMatchObject({ status: 'paid', tax_rule: 'oss', tax_name: 'VAT IE', tax: '2.30', total: '12.30' });
    expect(renewed.tax_evidence).toMatchObject({ billing_country: 'IE', card_country: 'IE', conflict: false });
    // Stripe's own event for that charge follows: a duplicate, and the card is already known.
    expect((await deliver(stand, stand.stripe.events.at(-1)!)).status).toBe(200);
    expect((await invoice(renewalId)).tax_evidence).toMatchObject({ card_country: 'IE', conflict: false });
    expect(await transactionsOf(stand.t, renewalId)).toHaveLength(1);
  });

  it('adds nothing to an invoice the EU rules did not tax (a balance top-up has no evidence)', async () => {
    const client = await stand.t.createClient({ country: 'FR' });
    const bought = await purchase(stand.t, plan, client);
    for (const event of await pay(bought, 'FR')) expect((await deliver(stand, event)).status).toBe(200);
    const hash = await asClient(stand.t, client.token, 'invoice/funds_invoice', { amount: '20.00' });
    expect(hash.body.error, JSON.stringify(hash.body)).toBeNull();
    const topUp = (await stand.t.call('/api/guest/invoice/get', { hash: hash.result })).result as { id: number };
    const session = await startCardPayment(stand, hash.result as string);
    for (const event of stand.stripe.completeSession(session, { cardCountry: 'US' })) expect((await deliver(stand, event)).status).toBe(200);
    expect(await invoice(topUp.id)).toMatchObject({ status: 'paid', tax_rule: 'untaxed', tax_evidence: null });
  });
});
