// Which notice each change sends (CONTRACT §10), queued from the event of the service that owns the change: a new
// invoice from checkout, a renewal invoice as the renewal reminder, payment reminders from the scheduled jobs (on
// fixed days around the due date, once each), a failed automatic payment, suspension for non-payment, cancellation.
// A client whose address cannot be mailed still gets the change. Runs on SQLite and, with TEST_DATABASE_URL,
// PostgreSQL + Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { inBrowser, makeProduct, signUp } from '../../helpers/selling-fixtures.ts';

const DAY = 86_400_000;
const PUBLIC_URL = 'https://pay.example.org';

let t: TestApp;
let productId: number;

beforeAll(async () => {
  t = await createTestApp({ PUBLIC_URL });
  productId = await makeProduct(t, { title: 'Pro plan' });
});

afterAll(async () => {
  await t.close();
});

async function mails(clientId: number) {
  return t.services.db.selectFrom('emails').selectAll().where('client_id', '=', clientId).orderBy('id').execute();
}

async function templates(clientId: number): Promise<string[]> {
  return (await mails(clientId)).map((mail) => mail.template);
}

describe('notices', () => {
  it('checkout sends the new invoice with its pay link; paying sends the receipt and the activation', async () => {
    const buyer = await signUp(t);
    expect((await inBrowser(t, buyer.browser, 'cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
    const checkout = await inBrowser(t, buyer.browser, 'cart/checkout', {});
    expect(checkout.body.error).toBeNull();
    const invoiceId = checkout.result.invoice_id as number;
    // Signing up sent the welcome mail (client_signup) first.
    const [signup, created] = await mails(buyer.id);
    expect(signup).toMatchObject({ template: 'client_signup', to_email: buyer.email });
    expect(created).toMatchObject({ template: 'invoice_created', to_email: buyer.email, subject: `Pro forma ${invoiceId}: 10.00 USD` });
    expect(created!.html).toContain(`href="${PUBLIC_URL}/invoices/${invoiceId}"`);
    expect(created!.text).toContain(`${PUBLIC_URL}/invoices/${invoiceId}`);
    expect(created!.attachments).toBe('[]');

    await t.admin('invoice/mark_as_paid', { id: invoiceId });
    const after = await mails(buyer.id);
    // Paying activates the order first, then announces the payment.
    expect(after.map((mail) => mail.template)).toEqual(['client_signup', 'invoice_created', 'order_activated', 'invoice_paid']);
    expect(JSON.parse(after[3]!.attachments)).toEqual([{ type: 'invoice_pdf', invoice_id: invoiceId }]);
    expect(after[2]!.html).toContain(`href="${PUBLIC_URL}/orders"`);
    expect(after[2]!.html).not.toContain('/keys');
  });

  it('announces a renewal invoice as the renewal reminder (not as a new invoice), then reminds on fixed days, once each', async () => {
    const client = await t.createClient();
    const now = Date.now();
    const order = (await t.admin('order/create', { client_id: client.id, product_id: productId, period: '1M', activate: true })).result as number;
    const expires = new Date(now + 5 * DAY + 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    expect((await t.admin('order/update', { id: order, expires_at: expires })).body.error).toBeNull();

    const report = await t.services.cron.run(new Date(now));
    expect(report.renewal_invoices).toBeGreaterThanOrEqual(1);
    const renewal = (await mails(client.id)).at(-1)!;
    expect(renewal.template).toBe('order_renewal_reminder');
    expect(renewal.subject).toBe(`Pro plan renews on ${expires.slice(0, 10)}`);
    expect(await templates(client.id)).not.toContain('invoice_created');
    const invoiceId = (await t.admin('order/get', { id: order })).result.unpaid_invoice_id as number;
    expect(renewal.html).toContain(`href="${PUBLIC_URL}/invoices/${invoiceId}"`);

    const reminders = async () => (await mails(client.id)).filter((mail) => mail.template === 'invoice_reminder');
    // Due in 5 days: nothing yet. Due in 2 days 23 hours: the 3-day reminder, once however often the jobs run.
    expect((await t.services.cron.run(new Date(now + 1000))).invoice_reminders).toBe(0);
    const threeDaysBefore = new Date(now + 2 * DAY + 2 * 3_600_000);
    expect((await t.services.cron.run(threeDaysBefore)).invoice_reminders).toBe(1);
    expect((await t.services.cron.run(threeDaysBefore)).invoice_reminders).toBe(0);
    expect((await t.services.cron.run(new Date(threeDaysBefore.getTime() + 3_600_000))).invoice_reminders).toBe(0);
    const [before] = await reminders();
    expect(before!.subject).toBe(`Pro forma ${invoiceId}`);
    expect(before!.text).toContain(`is due on ${expires.slice(0, 10)}`);
    // Two days before: no reminder; one day before: one.
    expect((await t.services.cron.run(new Date(now + 3 * DAY + 2 * 3_600_000))).invoice_reminders).toBe(0);
    expect((await t.services.cron.run(new Date(now + 4 * DAY + 2 * 3_600_000))).invoice_reminders).toBe(1);
    expect(await reminders()).toHaveLength(2);
    await t.admin('invoice/mark_as_paid', { id: invoiceId });
    // Paid: no reminders after the due date.
    expect((await t.services.cron.run(new Date(now + 6 * DAY + 2 * 3_600_000))).invoice_reminders).toBe(0);
    expect(await reminders()).toHaveLength(2);
  });

  it('reminds about an overdue invoice 1, 3 and 7 days after the due date, and suspends for non-payment', async () => {
    const client = await t.createClient();
    const created = await t.admin('order/create', { client_id: client.id, product_id: productId, period: '1M', invoice_option: 'issue-invoice' });
    const invoiceId = (await t.admin('order/get', { id: created.result })).result.unpaid_invoice_id as number;
    const due = Date.parse((await t.admin('invoice/get', { id: invoiceId })).result.due_at as string);
    const counts: number[] = [];
    for (let hours = 12; hours <= 10 * 24; hours += 12) counts.push((await t.services.cron.run(new Date(due + hours * 3_600_000))).invoice_reminders);
    expect(counts.reduce((sum, n) => sum + n, 0)).toBe(3);
    const reminders = (await mails(client.id)).filter((mail) => mail.template === 'invoice_reminder');
    expect(reminders.map((mail) => mail.subject)).toEqual([`Overdue: Pro forma ${invoiceId}`, `Overdue: Pro forma ${invoiceId}`, `Overdue: Pro forma ${invoiceId}`]);
    expect(reminders[0]!.text).toContain('is still unpaid');
  });

  it('reminds on the days the invoice_reminder_days setting names instead', async () => {
    const changed = await t.admin('system/settings_update', { invoice_reminder_days: '-2,5' });
    expect(changed.body.error).toBeNull();
    try {
      const client = await t.createClient();
      const created = await t.admin('order/create', { client_id: client.id, product_id: productId, period: '1M', invoice_option: 'issue-invoice' });
      const invoiceId = (await t.admin('order/get', { id: created.result })).result.unpaid_invoice_id as number;
      const due = Date.parse((await t.admin('invoice/get', { id: invoiceId })).result.due_at as string);
      // Other tests' unpaid invoices may be reminded too: count this client's reminders only.
      const reminders = async () => (await mails(client.id)).filter((mail) => mail.template === 'invoice_reminder').length;
      const queuedAt = new Map<number, number>();
      for (let hours = -4 * 24; hours <= 10 * 24; hours += 6) {
        const before = await reminders();
        await t.services.cron.run(new Date(due + hours * 3_600_000));
        const queued = (await reminders()) - before;
        if (queued > 0) queuedAt.set(hours, queued);
      }
      // One reminder 2 days before the due date (from 48 hours before it until 24) and one 5 days after it.
      expect([...queuedAt.values()]).toEqual([1, 1]);
      const [before, after] = [...queuedAt.keys()];
      expect(before).toBeGreaterThanOrEqual(-48);
      expect(before).toBeLessThan(-24);
      expect(after).toBeGreaterThanOrEqual(5 * 24);
      expect(after).toBeLessThan(6 * 24);
    } finally {
      await t.admin('system/settings_update', { invoice_reminder_days: '-3,-1,1,3,7' });
    }
  });

  it('tells the client about a failed automatic payment, suspension and cancellation', async () => {
    const client = await t.createClient();
    const order = (await t.admin('order/create', { client_id: client.id, product_id: productId, period: '1M', activate: true })).result as number;
    const invoiceId = (await t.call('/api/client/invoice/renewal_invoice', { order_id: order }, { basic: ['client', client.token] })).result as number;
    await inTransaction(t.services.db, (trx) =>
      t.services.events.emit('invoice.payment_failed', { invoiceId, clientId: client.id, message: 'Your card was declined.' }, trx),
    );
    const failed = (await mails(client.id)).at(-1)!;
    expect(failed).toMatchObject({ template: 'invoice_payment_failed', subject: `Payment of Pro forma ${invoiceId} failed` });
    expect(failed.text).toContain('Your card was declined.');
    expect(failed.html).toContain(`href="${PUBLIC_URL}/invoices/${invoiceId}"`);

    const expiry = Date.parse((await t.admin('order/get', { id: order })).result.expires_at as string);
    await t.services.cron.run(new Date(expiry + 60_000));
    expect((await t.admin('order/get', { id: order })).result.status).toBe('suspended');
    const suspended = (await mails(client.id)).find((mail) => mail.template === 'order_suspended')!;
    expect(suspended.subject).toBe('Pro plan is suspended');
    expect(suspended.text).toContain('(Non-payment)');
    await t.services.cron.run(new Date(expiry + 31 * DAY));
    expect((await t.admin('order/get', { id: order })).result.status).toBe('canceled');
    expect((await templates(client.id)).filter((code) => code === 'order_canceled')).toHaveLength(1);
  });

  it('still makes the change for a client whose address is not one plain address, and mails nothing', async () => {
    const client = await t.createClient({ email: `odd,${Date.now()}@example.com` });
    const order = await t.admin('order/create', { client_id: client.id, product_id: productId, period: '1M', activate: true });
    expect(order.body.error).toBeNull();
    expect((await t.admin('order/get', { id: order.result })).result.status).toBe('active');
    expect(await mails(client.id)).toEqual([]);
  });
});
