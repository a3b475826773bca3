// The dashboard's totals in the default currency computed the plain way from what seed.ts wrote (issue 26 item 7),
// from docs/dashboard.md's "Currencies": an invoice's amounts (and its transactions' and credit notes') are divided by
// the rate stored on it — amounts sharing a rate summed first, then rounded half up once — into the default it was
// issued against, and carried from there into today's default at today's rate; an invoice without a stored rate
// counts as issued in its own currency. What is not invoiced yet (MRR, renewals) is converted at today's rate.
import type { SeedInvoice, Seeded } from './seed.ts';

/** The default currency and today's rates of the others against it. */
export interface World {
  code: string;
  today: Record<string, string>;
}

/** The tests' world: USD the default, EUR at 0.9 per USD (created with admin/currency/create). */
export const USD_WORLD: World = { code: 'USD', today: { EUR: '0.9' } };

interface Stored {
  currency: string;
  currency_rate: string | null;
  currency_base: string | null;
}

function divideHalfUp(numerator: bigint, denominator: bigint): bigint {
  const magnitude = numerator < 0n ? -numerator : numerator;
  const rounded = (2n * magnitude + denominator) / (2n * denominator);
  return numerator < 0n ? -rounded : rounded;
}

/** `amount` ÷ `rate`, both currencies with 2 decimals (the seed's USD and EUR), rounded half up. */
function overRate(amount: number, rate: string): number {
  const [whole, fraction = ''] = rate.split('.');
  return Number(divideHalfUp(BigInt(amount) * 10n ** BigInt(fraction.length), BigInt(`${whole}${fraction}`)));
}

/** An amount stored with `stored`'s rate, in the default's minor units: into the default it was issued against, then on at today's rate. */
export function toDefault(amount: number, stored: Stored, world: World): number {
  const inBase = overRate(amount, stored.currency_rate ?? '1');
  const base = stored.currency_base ?? stored.currency;
  const today = world.today[base];
  return base === world.code || today === undefined ? inBase : overRate(inBase, today);
}

/** An amount of `currency` not invoiced yet, in the default at today's rate. */
export const atToday = (amount: number, currency: string, world: World): number => (currency === world.code ? amount : overRate(amount, world.today[currency]!));

const inRange = (moment: string | null, start: string, end: string): moment is string => moment !== null && moment >= start && moment < end;
const wasPaid = (invoice: SeedInvoice): boolean => invoice.status === 'paid' || invoice.status === 'refunded';

type Field = 'paid' | 'refunds' | 'credit_notes' | 'usage' | 'top_ups';
type Sums = Record<Field, number>;

/** Sums per (month or '', currency, rate, base), each converted once, then added up per month. */
export function revenueInDefault(seeded: Seeded, world: World, start: string, end: string, byMonth = false): Map<string, Sums & { net: number }> {
  const groups = new Map<string, { month: string; stored: Stored; sums: Sums }>();
  const invoiceOf = new Map(seeded.invoices.map((invoice) => [invoice.id, invoice]));
  const add = (moment: string, currency: string, invoiceId: number, field: Field, amount: number): void => {
    const invoice = invoiceOf.get(invoiceId)!;
    const stored = { currency, currency_rate: invoice.currency_rate, currency_base: invoice.currency_base };
    const month = byMonth ? moment.slice(0, 7) : '';
    const key = `${month}|${currency}|${stored.currency_rate ?? '1'}|${stored.currency_base ?? currency}`;
    const group = groups.get(key) ?? { month, stored, sums: { paid: 0, refunds: 0, credit_notes: 0, usage: 0, top_ups: 0 } };
    group.sums[field] += amount;
    groups.set(key, group);
  };
  for (const invoice of seeded.invoices) {
    if (!wasPaid(invoice) || !inRange(invoice.paid_at, start, end)) continue;
    const fromBalance = seeded.transactions.some((t) => t.invoice_id === invoice.id && t.type === 'payment' && t.gateway === 'credits');
    if (!fromBalance) add(invoice.paid_at, invoice.currency, invoice.id, 'paid', invoice.total);
    for (const item of invoice.items) {
      if (item.task === 'usage') add(invoice.paid_at, invoice.currency, invoice.id, 'usage', item.total);
      if (item.task === 'deposit') add(invoice.paid_at, invoice.currency, invoice.id, 'top_ups', item.total);
    }
  }
  for (const t of seeded.transactions) {
    if (t.type === 'refund' && t.status === 'refunded' && t.refund_of === null && t.gateway !== 'credits' && inRange(t.created_at, start, end)) add(t.created_at, t.currency, t.invoice_id, 'refunds', t.amount);
  }
  for (const note of seeded.notes) if (note.method === 'balance' && inRange(note.created_at, start, end)) add(note.created_at, note.currency, note.invoice_id, 'credit_notes', note.total);
  const out = new Map<string, Sums & { net: number }>();
  for (const { month, stored, sums } of groups.values()) {
    const entry = out.get(month) ?? { paid: 0, refunds: 0, credit_notes: 0, usage: 0, top_ups: 0, net: 0 };
    for (const field of Object.keys(sums) as Field[]) entry[field] += toDefault(sums[field], stored, world);
    entry.net = entry.paid - entry.refunds - entry.credit_notes;
    out.set(month, entry);
  }
  return out;
}

/** Failed invoices' totals and the recovered ones', per stored rate converted once. */
export function failedInDefault(seeded: Seeded, world: World, start: string, end: string): { failed: number; recovered: number } {
  const ids = new Set(seeded.transactions.filter((t) => t.type === 'payment' && t.status === 'failed' && inRange(t.created_at, start, end)).map((t) => t.invoice_id));
  const groups = new Map<string, { stored: Stored; failed: number; recovered: number }>();
  for (const invoice of seeded.invoices.filter((i) => ids.has(i.id))) {
    const key = `${invoice.currency}|${invoice.currency_rate}|${invoice.currency_base}`;
    const group = groups.get(key) ?? { stored: invoice, failed: 0, recovered: 0 };
    group.failed += invoice.total;
    if (wasPaid(invoice)) group.recovered += invoice.total;
    groups.set(key, group);
  }
  let failed = 0;
  let recovered = 0;
  for (const group of groups.values()) {
    failed += toDefault(group.failed, group.stored, world);
    recovered += toDefault(group.recovered, group.stored, world);
  }
  return { failed, recovered };
}

/**
 * The top 10 (client, currency) by what they paid in USD: per stored rate, their paid invoices converted once less their
 * balance payments converted once.
 */
export function topCustomersInDefault(seeded: Seeded, world: World, start: string, end: string): Array<{ client_id: number; currency: string; amount: number; inDefault: number }> {
  const groups = new Map<string, { client_id: number; currency: string; stored: Stored; invoiced: number; fromBalance: number }>();
  const invoiceOf = new Map(seeded.invoices.map((invoice) => [invoice.id, invoice]));
  const group = (clientId: number, currency: string, invoice: SeedInvoice) => {
    const key = `${clientId}|${currency}|${invoice.currency_rate}|${invoice.currency_base}`;
    const found = groups.get(key) ?? { client_id: clientId, currency, stored: { currency, currency_rate: invoice.currency_rate, currency_base: invoice.currency_base }, invoiced: 0, fromBalance: 0 };
    groups.set(key, found);
    return found;
  };
  for (const invoice of seeded.invoices) if (wasPaid(invoice) && inRange(invoice.paid_at, start, end)) group(invoice.client_id, invoice.currency, invoice).invoiced += invoice.total;
  for (const t of seeded.transactions) {
    if (t.type === 'payment' && t.gateway === 'credits' && (t.status === 'processed' || t.status === 'refunded') && inRange(t.created_at, start, end)) {
      group(t.client_id, t.currency, invoiceOf.get(t.invoice_id)!).fromBalance += t.amount;
    }
  }
  const clients = new Map<string, { client_id: number; currency: string; amount: number; inDefault: number }>();
  for (const g of groups.values()) {
    const key = `${g.client_id}|${g.currency}`;
    const entry = clients.get(key) ?? { client_id: g.client_id, currency: g.currency, amount: 0, inDefault: 0 };
    entry.amount += g.invoiced - g.fromBalance;
    entry.inDefault += toDefault(g.invoiced, g.stored, world) - toDefault(g.fromBalance, g.stored, world);
    clients.set(key, entry);
  }
  return [...clients.values()]
    .filter((entry) => entry.amount > 0)
    .toSorted((a, b) => b.inDefault - a.inDefault || a.client_id - b.client_id)
    .slice(0, 10);
}
