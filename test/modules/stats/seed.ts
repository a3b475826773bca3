// A random but reproducible book of business written straight into the tables (as the other modules write them), and
// the dashboard's figures computed from it by plain loops: the test compares the SQL answers with these. Dates are
// relative to `now` so the current range (the last 30 days) and the one before both hold records.
import type { Kysely } from 'kysely';
import type { Database } from '../../../src/db/schema.ts';

const DAY = 86_400_000;
export const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** mulberry32: a small seeded PRNG, so a failure can be replayed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SeedOrder {
  id: number;
  client_id: number;
  product_id: number;
  period: string;
  price: number;
  next_price: number | null;
  quantity: number;
  currency: string;
  status: 'active' | 'suspended' | 'canceled' | 'pending_setup';
  promo_id: number | null;
  trial_state: 'running' | 'ended' | null;
  trial_ends_at: string | null;
  cancel_at_period_end: number;
  activated_at: string | null;
  canceled_at: string | null;
  suspended_at: string | null;
  expires_at: string | null;
}

export interface SeedInvoice {
  id: number;
  client_id: number;
  status: 'paid' | 'refunded' | 'unpaid' | 'canceled';
  currency: string;
  /** As invoice/service.ts stores them against the default USD; null on some, as on invoices issued before migration 048. */
  currency_rate: string | null;
  currency_base: string | null;
  total: number;
  paid_at: string | null;
  items: Array<{ task: 'activate' | 'renew' | 'change' | 'usage' | 'deposit'; total: number }>;
}

export interface SeedTransaction {
  invoice_id: number;
  client_id: number;
  type: 'payment' | 'refund';
  status: 'processed' | 'failed' | 'refunded';
  gateway: string | null;
  amount: number;
  currency: string;
  created_at: string;
  refund_of: number | null;
}

export interface SeedNote {
  invoice_id: number;
  client_id: number;
  currency: string;
  method: 'refund' | 'balance';
  total: number;
  created_at: string;
}

export interface Seeded {
  orders: SeedOrder[];
  invoices: SeedInvoice[];
  transactions: SeedTransaction[];
  notes: SeedNote[];
  promos: Array<{ id: number; type: 'percentage' | 'absolute'; value: number; recurring: number; periods: string[] | null }>;
}

const pick = <T>(next: () => number, list: readonly T[]): T => list[Math.floor(next() * list.length)]!;

export async function seedBook(db: Kysely<Database>, clients: readonly number[], products: readonly number[], now: number, seed = 25): Promise<Seeded> {
  const next = random(seed);
  const stamp = iso(now);
  const promoSpecs = [
    { code: 'RECUR15', type: 'percentage' as const, value: 15_000, recurring: 1, periods: null },
    { code: 'RECUR3OFF', type: 'absolute' as const, value: 300, recurring: 1, periods: null },
    { code: 'ONCE50', type: 'percentage' as const, value: 50_000, recurring: 0, periods: null },
    { code: 'YEARLY10', type: 'percentage' as const, value: 10_000, recurring: 1, periods: ['1Y'] },
  ];
  const promos: Seeded['promos'] = [];
  for (const spec of promoSpecs) {
    const row = await db
      .insertInto('promos')
      .values({ code: `${spec.code}${seed}`, type: spec.type, value: spec.value, recurring: spec.recurring, periods: spec.periods === null ? null : JSON.stringify(spec.periods), products: null, max_uses: null, start_at: null, end_at: null, created_at: stamp, updated_at: stamp })
      .returning('id')
      .executeTakeFirstOrThrow();
    promos.push({ id: row.id, type: spec.type, value: spec.value, recurring: spec.recurring, periods: spec.periods });
  }

  const orders: SeedOrder[] = [];
  for (let index = 0; index < 160; index += 1) {
    // The last two clients only ever canceled: churned customers, in one range or the other.
    const leaving = index >= 150;
    const status = leaving ? 'canceled' : pick(next, ['active', 'active', 'active', 'suspended', 'canceled', 'pending_setup'] as const);
    const activated = status === 'pending_setup' ? null : leaving ? now - Math.floor((60 + next() * 20) * DAY) : now - Math.floor(next() * 90 * DAY);
    // Those leaving left 20 to 40 days ago.
    const canceled = leaving ? now - Math.floor((20 + next() * 20) * DAY) : status === 'canceled' && activated !== null ? activated + Math.floor(next() * (now - activated)) : null;
    const trial = pick(next, [null, null, null, 'running', 'ended'] as const);
    const values = {
      client_id: leaving ? clients[clients.length - 1 - (index % 2)]! : pick(next, clients.slice(0, -2)),
      product_id: pick(next, products),
      title: `Plan ${index}`,
      type: 'custom',
      period: pick(next, ['1W', '2W', '1M', '3M', '6M', '1Y', '2Y', '3Y', '10D']),
      quantity: 1 + Math.floor(next() * 3),
      price: 100 + Math.floor(next() * 99_900),
      next_price: next() < 0.1 ? 50 + Math.floor(next() * 5000) : null,
      currency: pick(next, ['USD', 'USD', 'EUR']),
      status,
      promo_id: next() < 0.4 ? pick(next, promos).id : null,
      trial_state: trial,
      trial_ends_at: trial === null ? null : iso(trial === 'running' ? now + 5 * DAY : (activated ?? now) + DAY),
      cancel_at_period_end: status === 'active' && next() < 0.2 ? 1 : 0,
      activated_at: activated === null ? null : iso(activated),
      canceled_at: canceled === null ? null : iso(canceled),
      suspended_at: status === 'suspended' ? iso(now - Math.floor(next() * 20 * DAY)) : null,
      expires_at: activated === null ? null : iso(now + Math.floor((next() * 70 - 10) * DAY)),
      config: '{}',
      created_at: iso(activated ?? now),
      updated_at: stamp,
    };
    const row = await db.insertInto('orders').values(values).returning('id').executeTakeFirstOrThrow();
    orders.push({ id: row.id, ...values });
  }

  const invoices: SeedInvoice[] = [];
  const transactions: SeedTransaction[] = [];
  const notes: SeedNote[] = [];
  for (let index = 0; index < 300; index += 1) {
    const status = pick(next, ['paid', 'paid', 'paid', 'refunded', 'unpaid', 'canceled'] as const);
    const currency = pick(next, ['USD', 'USD', 'EUR']);
    const created = now - Math.floor(next() * 400 * DAY);
    const paidAt = status === 'paid' || status === 'refunded' ? iso(Math.min(now - 1000, created + Math.floor(next() * 5 * DAY))) : null;
    const items = Array.from({ length: 1 + Math.floor(next() * 3) }, () => ({ task: pick(next, ['activate', 'renew', 'change', 'usage', 'deposit'] as const), total: 1 + Math.floor(next() * 20_000) }));
    const total = items.reduce((sum, item) => sum + item.total, 0) + Math.floor(next() * 500);
    const client = pick(next, clients);
    // Stored rates without drawing from the random stream (the other figures' seeds stay as they were): euros at two
    // rates, and every seventh invoice without a rate, as those issued before currencies were sold.
    const legacy = index % 7 === 0;
    const rate = legacy ? null : currency === 'USD' ? '1' : index % 2 === 0 ? '0.9204' : '0.95';
    const base = legacy ? null : 'USD';
    const row = await db
      .insertInto('invoices')
      .values({ hash: `seed${seed}-${index}-${Math.floor(next() * 1e9)}`, client_id: client, status, currency, subtotal: total, total, due_at: null, paid_at: paidAt, created_at: iso(created), updated_at: stamp, number: null, seller: null, buyer: JSON.stringify({ country: pick(next, ['DE', 'FR', 'US', null]) }), tax_name: null, promo_code: null, currency_rate: rate, currency_base: base, currency_rate_at: rate === null ? null : iso(created) })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (const item of items) {
      await db.insertInto('invoice_items').values({ invoice_id: row.id, order_id: null, task: item.task, title: item.task, period: null, quantity: 1, price: item.total, total: item.total, executed: 1, product_id: null, priced_until: null, covers_until: null }).execute();
    }
    invoices.push({ id: row.id, client_id: client, status, currency, currency_rate: rate, currency_base: base, total, paid_at: paidAt, items });
    const transaction = (fields: Omit<SeedTransaction, 'invoice_id' | 'client_id' | 'currency'>): SeedTransaction => ({ invoice_id: row.id, client_id: client, currency, ...fields });
    // Failed attempts first (some on invoices paid later: recovered).
    if (next() < 0.25) {
      const failedAt = created + Math.floor(next() * 2 * DAY);
      for (let attempt = 0; attempt < 1 + Math.floor(next() * 3); attempt += 1) {
        transactions.push(transaction({ type: 'payment', status: 'failed', gateway: 'stripe', amount: total, created_at: iso(Math.min(now - 1000, failedAt + attempt * 3600_000)), refund_of: null }));
      }
    }
    if (paidAt !== null) {
      const gateway = pick(next, ['custom', 'stripe', 'credits', null]);
      transactions.push(transaction({ type: 'payment', status: status === 'refunded' ? 'refunded' : 'processed', gateway, amount: total, created_at: paidAt, refund_of: null }));
      const refundAt = iso(Math.min(now - 500, Date.parse(paidAt) + Math.floor(next() * 40 * DAY)));
      const roll = next();
      if (status === 'refunded' || roll < 0.2) {
        const amount = status === 'refunded' ? total : 1 + Math.floor(next() * (total - 1));
        transactions.push(transaction({ type: 'refund', status: 'refunded', gateway, amount, created_at: refundAt, refund_of: null }));
        notes.push({ invoice_id: row.id, client_id: client, currency, method: 'refund', total: amount, created_at: refundAt });
      } else if (roll < 0.4) {
        notes.push({ invoice_id: row.id, client_id: client, currency, method: 'balance', total: 1 + Math.floor(next() * total), created_at: refundAt });
      }
      if (next() < 0.05) {
        // A late payment of this invoice refunded automatically: never counted, in or out.
        transactions.push(transaction({ type: 'refund', status: 'refunded', gateway: 'stripe', amount: 999, created_at: refundAt, refund_of: 1 }));
      }
    }
  }
  for (const [index, row] of transactions.entries()) {
    await db.insertInto('transactions').values({ ...row, gateway_id: null, transaction_id: `seed-${seed}-${index}`, message: null }).execute();
  }
  for (const [index, note] of notes.entries()) {
    await db
      .insertInto('credit_notes')
      .values({ number: `SEED${seed}-${index}`, invoice_id: note.invoice_id, client_id: note.client_id, currency: note.currency, method: note.method, reason: 'seed', subtotal: note.total, tax: 0, total: note.total, tax_name: null, transaction_id: null, staff_id: null, source_key: `seed:${seed}:${index}`, created_at: note.created_at })
      .execute();
  }
  return { orders, invoices, transactions, notes, promos };
}
