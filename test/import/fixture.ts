// The fixture: a FOSSBilling 0.8.5 database (the table layout of fossbilling-0.8.5.sql) filled with `clients`
// clients and, for each, an API-key order with its key and two invoices (one paid, one not), plus one record of every
// bad kind the import has a rule for. Returns what the import must reproduce, so the tests can compare.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hashSync } from '@node-rs/bcrypt';
import type { Connection } from 'mysql2/promise';

export interface FixtureKey { fbOrderId: number; key: string; valid: boolean; custom: Record<string, unknown> }
export interface FixtureInvoice { fbId: number; number: string | null; total: number; paid: boolean }
export interface Fixture {
  clients: Array<{ fbId: number; email: string; password: string }>;
  keys: FixtureKey[];
  invoices: FixtureInvoice[];
  /** FOSSBilling ids of the records each rule must catch. */
  bad: {
    duplicateEmailClient: number; orphanClientOrder: number; orphanProductOrder: number; emptyInvoice: number; deletedOrderKey: number;
    brokenConfigOrder: number; brokenConfigKey: number; brokenConfigProduct: number; hostingProduct: number; failedRenewOrder: number;
  };
  balances: { clients: number; total: string };
}

export interface FixtureOptions {
  clients: number;
  /** Invoices per client (half paid); 2 by default. */
  invoicesPerClient?: number;
  /** One bcrypt hash for every client (fast, for the speed measurement) instead of one per client. */
  sharedHash?: boolean;
  lastPatch?: string;
}

const SCHEMA = new URL('./fossbilling-0.8.5.sql', import.meta.url);
const PAST = '2020-01-01 00:00:00';
const FUTURE = '2099-01-01 00:00:00';
const CREATED = '2024-05-01 10:00:00';

/** A key as FOSSBilling's generator makes them: hex, split with dashes, upper/lower/mixed case. */
function fbKey(length: number, interval: number, kind: 'upper' | 'lower' | 'mixed'): string {
  const hex = randomBytes(Math.ceil(length / 2)).toString('hex').slice(0, length);
  let key = hex.match(new RegExp(`.{1,${interval}}`, 'g'))!.join('-');
  if (kind === 'upper') key = key.toUpperCase();
  if (kind === 'mixed') key = key.split('').map((c) => (Math.random() < 0.5 ? c.toUpperCase() : c)).join('');
  return key;
}

/** PHP's password_hash() writes `$2y$`; the bcrypt library writes `$2b$` for the same algorithm. */
function phpHash(password: string): string {
  return hashSync(password, 4).replace(/^\$2b\$/, '$2y$');
}

async function insert(db: Connection, table: string, rows: Array<Record<string, unknown>>): Promise<void> {
  if (rows.length === 0) return;
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000).map((row) => columns.map((column) => row[column] ?? null));
    await db.query(`INSERT INTO \`${table}\` (${columns.map((c) => `\`${c}\``).join(', ')}) VALUES ?`, [chunk]);
  }
}

export async function buildFixture(db: Connection, database: string, options: FixtureOptions): Promise<Fixture> {
  await db.query(`DROP DATABASE IF EXISTS \`${database}\`; CREATE DATABASE \`${database}\` CHARACTER SET utf8; USE \`${database}\``);
  await db.query(await readFile(SCHEMA, 'utf8'));
  const perClient = options.invoicesPerClient ?? 2;
  await insert(db, 'setting', [{ id: 1, param: 'last_patch', value: options.lastPatch ?? '91', created_at: CREATED, updated_at: CREATED }]);
  await insert(db, 'currency', [{ id: 1, code: 'USD', is_default: 1, conversion_rate: '1.000000' }, { id: 2, code: 'EUR', is_default: 0, conversion_rate: '0.9' }]);
  await insert(db, 'pay_gateway', [{ id: 1, name: 'Bank transfer', gateway: 'Custom', enabled: 1 }]);
  await insert(db, 'admin_group', [{ id: 1, name: 'Super Administrator', system_name: 'super_admin', protected: 1 }, { id: 2, name: 'Support Lead', system_name: 'support_lead', parent_id: 1 }]);
  await insert(db, 'admin', [
    { id: 1, system_name: 'cron', email: 'cron@fossbilling.invalid', name: 'System cron', status: 'active', created_at: CREATED },
    { id: 2, email: 'Boss@FB.example', name: 'The Boss', status: 'active', api_token: randomBytes(16).toString('hex'), pass: phpHash('x'), created_at: CREATED },
    { id: 3, email: 'support@fb.example', name: 'Sue Port', status: 'inactive', created_at: CREATED },
  ]);
  await insert(db, 'admin_group_member', [{ admin_id: 2, admin_group_id: 1 }, { admin_id: 3, admin_group_id: 2 }]);
  await insert(db, 'client_group', [{ id: 1, title: 'Default' }, { id: 2, title: 'Resellers' }]);
  await insert(db, 'tax', [{ id: 1, level: 1, name: 'VAT', country: 'NL', taxrate: '21' }]);

  await insert(db, 'product_payment', [
    { id: 1, type: 'recurrent', m_price: '10.00', a_price: '100.00', m_enabled: 1, a_enabled: 1, w_enabled: 0, q_enabled: 0, b_enabled: 0, bia_enabled: 0, tria_enabled: 0 },
    { id: 2, type: 'once', once_price: '49.99', once_setup_price: '5.00' },
    { id: 3, type: 'free' },
  ]);
  const proConfig = { length: 32, split: true, split_interval: 8, case: 'upper', custom_tier: 'pro', custom_monthlyLimit: '1000' };
  const basicConfig = { length: 24, split: false, case: 'lower', custom_tier: 'basic', custom_region: 'eu' };
  await insert(db, 'product', [
    { id: 1, product_payment_id: 1, title: 'API Pro', slug: 'api-pro', type: 'apikey', status: 'enabled', setup: 'after_payment', config: JSON.stringify(proConfig), created_at: CREATED },
    { id: 2, product_payment_id: 2, title: 'API Basic', slug: 'api-basic', type: 'apikey', status: 'enabled', setup: 'after_order', config: JSON.stringify(basicConfig), created_at: CREATED },
    { id: 3, product_payment_id: 3, title: 'Support plan', slug: 'support', type: 'custom', status: 'disabled', hidden: 1, config: '[]', created_at: CREATED },
    { id: 4, product_payment_id: 3, title: 'Shared hosting', slug: 'hosting', type: 'hosting', status: 'enabled', config: '{}', created_at: CREATED },
    { id: 5, product_payment_id: 1, title: 'API Broken', slug: 'api-broken', type: 'apikey', status: 'enabled', config: '{"length": 32,', created_at: CREATED },
  ]);

  const fixture: Fixture = { clients: [], keys: [], invoices: [], bad: {} as Fixture['bad'], balances: { clients: 0, total: '0.00' } };
  const shared = options.sharedHash === true ? phpHash('Fossbilling-1') : null;
  const clients: Array<Record<string, unknown>> = [];
  const orders: Array<Record<string, unknown>> = [];
  const keys: Array<Record<string, unknown>> = [];
  const invoices: Array<Record<string, unknown>> = [];
  const items: Array<Record<string, unknown>> = [];
  const transactions: Array<Record<string, unknown>> = [];
  const balances: Array<Record<string, unknown>> = [];
  let invoiceId = 0;
  let balanceCents = 0;
  for (let id = 1; id <= options.clients; id++) {
    const email = `client${id}@fb.example`;
    const password = shared === null ? `Fossbilling-${id}` : 'Fossbilling-1';
    fixture.clients.push({ fbId: id, email, password });
    clients.push({
      id, client_group_id: 1 + (id % 2), email, pass: shared ?? phpHash(password), status: id % 23 === 0 ? 'suspended' : 'active', email_approved: 1, tax_exempt: 0, first_name: `First${id}`,
      last_name: `Last${id}`, phone_cc: '31', phone: '201234567', company: id % 3 === 0 ? `Company ${id}` : null, company_vat: null, address_1: `Street ${id}`,
      city: 'Amsterdam', postcode: '1011AA', country: id % 10 === 0 ? 'Netherlands' : 'NL', currency: 'USD', api_token: randomBytes(16).toString('hex'), created_at: CREATED, updated_at: CREATED,
    });
    if (id % 7 === 0) {
      balances.push({ client_id: id, type: 'deposit', amount: '12.50', created_at: CREATED });
      balanceCents += 1250;
    }
    // One API-key order per client: pro (monthly) or basic (once); some suspended, canceled, expired, not yet active.
    const pro = id % 2 === 1;
    const status = id % 11 === 0 ? 'suspended' : id % 13 === 0 ? 'canceled' : id % 17 === 0 ? 'pending_setup' : 'active';
    const expires = pro ? (id % 19 === 0 ? PAST : FUTURE) : null;
    const config = pro ? proConfig : basicConfig;
    const key = status === 'pending_setup' ? null : pro ? fbKey(32, 8, 'upper') : fbKey(24, 24, id % 4 === 0 ? 'mixed' : 'lower');
    keys.push({ id, client_id: id, api_key: key, config: JSON.stringify(config), created_at: CREATED, updated_at: CREATED });
    orders.push({
      id, client_id: id, product_id: pro ? 1 : 2, title: pro ? 'API Pro' : 'API Basic', currency: 'USD', service_id: id, service_type: 'apikey', period: pro ? '1M' : null,
      quantity: 1, price: pro ? 10 : 49.99, status, config: JSON.stringify(config), expires_at: expires, activated_at: status === 'pending_setup' ? null : CREATED, created_at: CREATED, updated_at: CREATED,
    });
    if (key !== null) {
      const custom = pro ? { tier: 'pro', monthlyLimit: 1000 } : { tier: 'basic', region: 'eu' };
      // Tollgate also refuses the keys of a suspended client (FOSSBilling looked at the order only): a documented difference.
      fixture.keys.push({ fbOrderId: id, key, valid: status === 'active' && expires !== PAST && id % 23 !== 0, custom });
    }
    for (let n = 0; n < perClient; n++) {
      const fbId = ++invoiceId;
      const paid = n % 2 === 0;
      const taxed = id % 5 === 0;
      const lines = n === 0 ? [{ title: pro ? 'API Pro (1 month)' : 'API Basic', price: pro ? '10.00' : '49.99', quantity: 1, task: 'activate' }] : [{ title: 'Renewal', price: '10.00', quantity: 1, task: 'renew' }, { title: 'Extra calls', price: '0.33', quantity: 3, task: 'activate' }];
      const subtotal = lines.reduce((sum, line) => sum + Math.round(Number(line.price) * 100) * line.quantity, 0);
      const tax = taxed ? Math.round((subtotal * 21) / 100) : 0;
      const number = paid ? `FOSS${String(fbId).padStart(5, '0')}` : null;
      fixture.invoices.push({ fbId, number, total: subtotal + tax, paid });
      invoices.push({
        id: fbId, client_id: id, serie: 'FOSS', nr: paid ? String(fbId).padStart(5, '0') : null, hash: randomBytes(16).toString('hex'), currency: 'USD', status: paid ? 'paid' : 'unpaid',
        buyer_first_name: `First${id}`, buyer_last_name: `Last${id}`, buyer_email: email, seller_company: 'FB Seller', taxname: taxed ? 'VAT' : null, taxrate: taxed ? '21' : '0',
        due_at: CREATED, paid_at: paid ? CREATED : null, created_at: CREATED, updated_at: CREATED,
      });
      for (const line of lines) {
        items.push({ invoice_id: fbId, type: 'order', rel_id: String(id), task: line.task, status: paid ? 'executed' : 'pending_payment', title: line.title, period: pro ? '1M' : null, quantity: line.quantity, price: line.price, taxed: taxed ? 1 : 0 });
      }
      if (paid) transactions.push({ invoice_id: fbId, gateway_id: 1, txn_id: `TXN-${fbId}`, amount: ((subtotal + tax) / 100).toFixed(2), currency: 'USD', type: 'payment', status: 'processed', created_at: CREATED });
    }
  }
  // The bad records, one of each rule.
  const next = options.clients + 1;
  clients.push({ id: next, email: ` client1@fb.example`, pass: phpHash('Whatever-1'), status: 'active', first_name: 'Dupe', created_at: CREATED });
  fixture.bad.duplicateEmailClient = next;
  fixture.bad.orphanClientOrder = 900001;
  fixture.bad.orphanProductOrder = 900002;
  fixture.bad.failedRenewOrder = 900003;
  fixture.bad.brokenConfigOrder = 900004;
  orders.push(
    { id: 900001, client_id: 777777, product_id: 1, title: 'Orphan', currency: 'USD', status: 'active', config: '{}', created_at: CREATED },
    { id: 900002, client_id: 1, product_id: 888, title: 'Gone product', currency: 'USD', status: 'active', config: '{}', created_at: CREATED },
    { id: 900003, client_id: 2, product_id: 1, title: 'Renewal failed', currency: 'USD', period: '1M', price: 10, status: 'failed_renew', service_id: 900003, service_type: 'apikey', config: JSON.stringify(proConfig), expires_at: FUTURE, created_at: CREATED },
    { id: 900004, client_id: 3, product_id: 5, title: 'API Broken', currency: 'USD', period: '1M', price: 10, status: 'active', service_id: 900004, service_type: 'apikey', config: '{"length":', expires_at: FUTURE, created_at: CREATED },
  );
  const failedKey = fbKey(32, 8, 'upper');
  const brokenKey = fbKey(32, 8, 'upper');
  keys.push(
    { id: 900003, client_id: 2, api_key: failedKey, config: JSON.stringify(proConfig), created_at: CREATED },
    { id: 900004, client_id: 3, api_key: brokenKey, config: '{"custom_tier": "x",', created_at: CREATED },
    { id: 900005, client_id: 4, api_key: fbKey(32, 8, 'upper'), config: '{}', created_at: CREATED },
  );
  fixture.keys.push({ fbOrderId: 900003, key: failedKey, valid: false, custom: { tier: 'pro', monthlyLimit: 1000 } }, { fbOrderId: 900004, key: brokenKey, valid: true, custom: {} });
  fixture.bad.brokenConfigKey = 900004;
  fixture.bad.deletedOrderKey = 900005;
  fixture.bad.brokenConfigProduct = 5;
  fixture.bad.hostingProduct = 4;
  fixture.bad.emptyInvoice = 900001;
  invoices.push({ id: 900001, client_id: 1, serie: 'FOSS', nr: '99999', hash: randomBytes(16).toString('hex'), currency: 'USD', status: 'paid', created_at: CREATED });

  await insert(db, 'client', clients);
  await insert(db, 'client_balance', balances);
  await insert(db, 'client_order', orders);
  await insert(db, 'service_apikey', keys);
  await insert(db, 'invoice', invoices);
  await insert(db, 'invoice_item', items);
  await insert(db, 'transaction', transactions);
  fixture.balances = { clients: balances.length, total: (balanceCents / 100).toFixed(2) };
  return fixture;
}
