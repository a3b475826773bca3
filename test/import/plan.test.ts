// Planning the FOSSBilling import without a database on either side: the rules that need a Tollgate already holding
// something (a key, an invoice hash), and the progress lines. The whole round trip is in fossbilling.test.ts.
import { describe, expect, it } from 'vitest';
import { buildPlan } from '../../src/import/fossbilling/plan.ts';
import { KINDS, type Kind, type TollgateState } from '../../src/import/fossbilling/plan-types.ts';
import { progressPrinter } from '../../src/import/fossbilling/report.ts';
import type { FbData } from '../../src/import/fossbilling/source.ts';

const KEY = 'ABCDEF01-23456789-ABCDEF01-23456789';
const HASH = 'f'.repeat(32);
const hashOf = (value: string): string => `h:${value}`;

function data(): FbData {
  const at = '2024-01-01 00:00:00';
  return {
    lastPatch: '91', defaultCurrency: 'USD', currencies: ['USD'], adminGroups: [], admins: [], clientGroups: [], balances: [], taxes: [], payments: [],
    clients: [{ id: 1, client_group_id: null, email: 'a@b.example', pass: null, status: 'active', email_approved: 0, tax_exempt: 0, first_name: 'A', last_name: null, phone_cc: null, phone: null, company: null, company_vat: null, address_1: null, address_2: null, city: null, state: null, postcode: null, country: null, currency: 'USD', api_token: null, created_at: at, updated_at: at }],
    products: [{ id: 1, product_payment_id: null, title: 'Keys', slug: 'keys', description: null, status: 'enabled', hidden: 0, setup: 'after_payment', config: '{}', type: 'apikey', created_at: at, updated_at: at }],
    orders: [{ id: 1, client_id: 1, product_id: 1, title: 'Keys', currency: 'JPY', service_id: 1, service_type: 'apikey', period: '1M', quantity: 1, price: '1200', status: 'active', reason: null, notes: null, config: '{}', expires_at: null, activated_at: at, suspended_at: null, canceled_at: null, created_at: at, updated_at: at }],
    apiKeys: [{ id: 1, client_id: 1, api_key: KEY, config: '{"custom_tier":"pro"}', created_at: at, updated_at: at }],
    invoices: [{ id: 1, client_id: 1, serie: 'FB', nr: '1', hash: HASH, currency: 'USD', status: 'paid', seller_company: null, seller_company_vat: null, seller_address: null, seller_email: null, buyer_first_name: null, buyer_last_name: null, buyer_company: null, buyer_company_vat: null, buyer_address: null, buyer_city: null, buyer_state: null, buyer_country: null, buyer_zip: null, buyer_email: null, taxname: null, taxrate: null, due_at: null, paid_at: at, created_at: at, updated_at: at }],
    items: [{ id: 1, invoice_id: 1, type: 'order', rel_id: '1', task: 'activate', status: 'executed', title: 'Keys', period: '1M', quantity: 1, price: '12.00', taxed: 0 }],
    transactions: [],
  };
}

function state(overrides: Partial<TollgateState> = {}): TollgateState {
  return {
    mapped: new Map<Kind, Map<number, { tollgateId: number; fingerprint: string }>>(KINDS.map((kind) => [kind, new Map()])),
    clientEmails: new Map(), staffEmails: new Map(), productSlugs: new Map(), invoiceNumbers: new Map(), invoiceHashes: new Map(), keyHashes: new Map(),
    currency: 'USD', precision: 2, invoicePrefix: 'INV-',
    ...overrides,
  };
}

describe('planning the FOSSBilling import', () => {
  it('imports the key with its custom parameters, and an order\'s price in its own currency\'s units', () => {
    const plan = buildPlan(data(), state(), hashOf, hashOf);
    expect(plan.keys.map((k) => [k.values.key, JSON.parse(k.values.config)])).toEqual([[KEY, { tier: 'pro' }]]);
    expect(plan.orders[0]!.values).toMatchObject({ currency: 'JPY', price: 1200 });
    expect(plan.invoices[0]!.values).toMatchObject({ hash: HASH, number: 'FB1', total: 1200 });
  });

  it('skips a key Tollgate already holds for another order', () => {
    const plan = buildPlan(data(), state({ keyHashes: new Map([[hashOf(KEY), 77]]) }), hashOf, hashOf);
    expect(plan.keys).toEqual([]);
    expect(plan.problems).toContainEqual({ kind: 'apikey', fbId: 1, outcome: 'skipped', message: 'the key of order 1 already exists in Tollgate (key 77)' });
  });

  it('keeps the key when it is the one an earlier run imported', () => {
    const mapped = state().mapped;
    mapped.get('apikey')!.set(1, { tollgateId: 77, fingerprint: 'old' });
    const plan = buildPlan(data(), state({ mapped, keyHashes: new Map([[hashOf(KEY), 77]]) }), hashOf, hashOf);
    expect(plan.keys.map((k) => [k.action, k.tollgateId])).toEqual([['update', 77]]);
  });

  it('gives an invoice a new public hash when Tollgate already uses its hash', () => {
    const plan = buildPlan(data(), state({ invoiceHashes: new Map([[HASH, 5]]) }), hashOf, hashOf);
    expect(plan.invoices[0]!.values.hash).toBeNull();
    expect(plan.problems).toContainEqual({ kind: 'invoice', fbId: 1, outcome: 'fixed', message: 'public hash unusable or already taken: a new one is made (old guest links stop working)' });
  });

  it('a client with an unknown status becomes active; a hash that is not bcrypt is dropped', () => {
    const source = data();
    source.clients[0] = { ...source.clients[0]!, status: 'weird', pass: 'md5:abc' };
    const plan = buildPlan(source, state(), hashOf, hashOf);
    expect(plan.clients[0]!.values).toMatchObject({ status: 'active', password_hash: null });
    expect(plan.problems).toContainEqual({ kind: 'client', fbId: 1, outcome: 'fixed', message: 'password hash is not bcrypt: imported without a password (the client resets it)' });
  });
});

describe('progress', () => {
  it('rewrites one line per kind on a terminal, and writes one plain line per kind otherwise', () => {
    let tty = '';
    const onTerminal = progressPrinter({ isTTY: true, write: (text) => void (tty += text) });
    onTerminal('client', 500, 1000);
    onTerminal('client', 1000, 1000);
    expect(tty).toBe('\rclient: 500/1000\rclient: 1000/1000\n');
    let log = '';
    const inLog = progressPrinter({ isTTY: false, write: (text) => void (log += text) });
    inLog('client', 500, 1000);
    inLog('client', 1000, 1000);
    expect(log).toBe('client: 1000/1000\n');
  });
});
