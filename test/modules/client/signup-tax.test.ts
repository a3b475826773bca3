// Issue 21 item 8: tax applies to people who sign up themselves. While any tax rule exists, guest/system/billing says
// so (the sign-up form then asks for the billing country and address), checkout of something to pay without a
// billing country is a clear 422 naming `country` (the cart is kept), and the invoice's "Bill to" carries the country
// and address given at sign-up, with the country's tax. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/database.ts';
import { migrations } from '../../../src/db/migrations/index.ts';
import { Browser, createTestApp, freshPostgresDatabase, type TestApp } from '../../helpers/app.ts';
import { expectError } from '../../helpers/assertions.ts';
import { inBrowser, makeProduct, signUp } from '../../helpers/selling-fixtures.ts';

describe('tax for self sign-ups', () => {
  let t: TestApp;
  let paid: number;
  let free: number;

  beforeAll(async () => {
    t = await createTestApp({ CURRENCY: 'EUR' });
    paid = await makeProduct(t, { title: 'Paid plan' });
    free = await makeProduct(t, { title: 'Free plan', pricing: { type: 'free' } });
  });
  afterAll(async () => {
    await t.close();
  });

  const billing = async () => (await t.call('/api/guest/system/billing', {})).result as { currency: string; tax_applies: boolean };
  const addToCart = async (browser: Browser, id: number) => {
    const added = await t.call('/api/guest/cart/add_item', { id, ...(id === paid && { period: '1M' }) }, { browser, csrf: true });
    expect(added.body.error).toBeNull();
  };

  it('without tax rules, nobody is asked for a country and checkout works as before', async () => {
    expect(await billing()).toEqual({ currency: 'EUR', tax_applies: false, tax_inclusive: false });
    const buyer = await signUp(t);
    await addToCart(buyer.browser, paid);
    const checkout = await inBrowser(t, buyer.browser, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
  });

  it('with a tax rule, checkout without a billing country is a 422 naming country, and the cart is kept', async () => {
    const rule = await t.admin('invoice/tax_create', { name: 'VAT', rate: '20', country: 'DE' });
    expect(rule.body.error).toBeNull();
    expect(await billing()).toEqual({ currency: 'EUR', tax_applies: true, tax_inclusive: false });
    const buyer = await signUp(t);
    await addToCart(buyer.browser, paid);
    const refused = await inBrowser(t, buyer.browser, 'cart/checkout');
    expectError(refused, 422);
    expect(refused.body.error!.message).toMatch(/^Parameter "country" is required before checkout: set your billing country in your profile/);
    const cart = (await inBrowser(t, buyer.browser, 'cart/get')).result as { items: unknown[] };
    expect(cart.items).toHaveLength(1);
    // Nothing was ordered or invoiced.
    expect((await inBrowser(t, buyer.browser, 'order/get_list')).result.total).toBe(0);
    expect((await inBrowser(t, buyer.browser, 'invoice/get_list')).result.total).toBe(0);

    // A wrong country code is refused where it is set; a real one lets the checkout through with the country's tax.
    expectError(await inBrowser(t, buyer.browser, 'profile/update', { country: 'Germany' }), 422);
    expect((await inBrowser(t, buyer.browser, 'profile/update', { country: 'DE' })).body.error).toBeNull();
    const checkout = await inBrowser(t, buyer.browser, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    const invoice = (await inBrowser(t, buyer.browser, 'invoice/get', { id: checkout.result.invoice_id })).result;
    expect(invoice).toMatchObject({ subtotal: '10.00', tax_name: 'VAT', total: '12.00', buyer: { country: 'DE' } });
  });

  it('a sign-up with its billing address carries it onto the invoice\'s "Bill to", taxed', async () => {
    const browser = new Browser();
    const email = `taxed-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const password = 'Buyer-Passw0rd';
    const created = await t.call(
      '/api/guest/client/create',
      { email, first_name: 'Greta', last_name: 'Buyer', password, password_confirm: password, address_1: 'Hauptstraße 1', address_2: 'Hinterhaus', city: 'Berlin', postcode: '10115', country: 'DE' },
      { browser },
    );
    expect(created.body.error).toBeNull();
    await addToCart(browser, paid);
    const checkout = await inBrowser(t, browser, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    const invoice = (await inBrowser(t, browser, 'invoice/get', { id: checkout.result.invoice_id })).result;
    expect(invoice.buyer).toMatchObject({ name: 'Greta Buyer', address_1: 'Hauptstraße 1', address_2: 'Hinterhaus', city: 'Berlin', postcode: '10115', country: 'DE' });
    expect(invoice).toMatchObject({ tax_name: 'VAT', total: '12.00' });
  });

  it('an account staff created, nothing to pay, or a tax-exempt client needs no country', async () => {
    // Staff complete the accounts they create (and an invoice they issue takes the rule without a country).
    const made = await t.createClient();
    expect((await t.call('/api/client/cart/add_item', { id: paid, period: '1M' }, { basic: ['client', made.token] })).body.error).toBeNull();
    expect((await t.call('/api/client/cart/checkout', {}, { basic: ['client', made.token] })).body.error).toBeNull();
    const buyer = await signUp(t);
    await addToCart(buyer.browser, free);
    expect((await inBrowser(t, buyer.browser, 'cart/checkout')).body.error).toBeNull();
    const exempt = await signUp(t);
    expect((await t.admin('client/update', { id: exempt.id, tax_exempt: true })).body.error).toBeNull();
    await addToCart(exempt.browser, paid);
    expect((await inBrowser(t, exempt.browser, 'cart/checkout')).body.error).toBeNull();
  });

  it('the sign-up itself refuses a wrong-typed country with a 422', async () => {
    const password = 'Buyer-Passw0rd';
    const reply = await t.call('/api/guest/client/create', { email: 'typed@example.com', first_name: 'T', password, password_confirm: password, country: 'Narnia' }, { browser: new Browser() });
    expectError(reply, 422);
  });
});

describe('migration 021_buyer: self sign-ups', () => {
  it('marks the accounts that signed themselves up: unconfirmed, or confirmed after creation; staff-made ones not', async () => {
    const PG = process.env.TEST_DATABASE_URL ?? '';
    const postgres = PG === '' ? null : await freshPostgresDatabase(PG);
    const handle = openDatabase(postgres?.url ?? 'sqlite::memory:');
    try {
      // Migrations take Kysely<any>; so does this test, which writes the table as it was before 021.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const db = handle.db as unknown as Kysely<any>;
      const migrator = new Migrator({ db, provider: { getMigrations: (): Promise<Record<string, Migration>> => Promise.resolve(migrations) } });
      expect((await migrator.migrateTo('016_search_speed')).error).toBeUndefined();
      const at = '2026-11-22T10:00:00Z';
      const rows: Array<[string, string | null]> = [
        ['staff@example.com', at],
        ['unconfirmed@example.com', null],
        ['confirmed@example.com', '2026-11-22T10:05:00Z'],
      ];
      for (const [email, verified] of rows) {
        await sql`INSERT INTO clients (email, first_name, status, api_token_hash, api_token_enc, created_at, updated_at, email_verified_at) VALUES (${email}, 'A', 'active', ${email}, 'e', ${at}, ${at}, ${verified})`.execute(db);
      }
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      const marked = await sql<{ email: string; self_signup: number | string }>`SELECT email, self_signup FROM clients ORDER BY id`.execute(db);
      expect(marked.rows.map((row) => [row.email, Number(row.self_signup)])).toEqual([
        ['staff@example.com', 0],
        ['unconfirmed@example.com', 1],
        ['confirmed@example.com', 1],
      ]);
    } finally {
      await handle.close();
      await postgres?.drop();
    }
  });
});
