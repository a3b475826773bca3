// The dashboard's figures computed the plain way, one record at a time, from what seed.ts wrote: the reference the
// SQL answers are compared with. Written from docs/dashboard.md's definitions, not from the service's code.
import type { SeedInvoice, SeedOrder, Seeded } from './seed.ts';

const UNIT_DAYS_PER_YEAR = { D: 365n, W: 52n, M: 12n, Y: 1n } as const;
/** A common denominator for every period the seed uses (counts 1, 2, 3, 6, 10): 12 months × 365 × 52 × 30. */
const DENOMINATOR = 12n * 365n * 52n * 30n;

/** amount per period → per month × DENOMINATOR (exact: periods per year × amount / 12). */
function monthlyScaled(amount: number, period: string): bigint {
  const count = BigInt(period.slice(0, -1));
  const perYear = UNIT_DAYS_PER_YEAR[period.slice(-1) as 'D' | 'W' | 'M' | 'Y'];
  const scaled = BigInt(amount) * perYear * DENOMINATOR;
  const divisor = 12n * count;
  if (scaled % divisor !== 0n) throw new Error('denominator too small');
  return scaled / divisor;
}

const halfUp = (scaled: bigint): number => Number((2n * scaled + DENOMINATOR) / (2n * DENOMINATOR));
const halfUpPercent = (amount: number, rate: number): number => Math.floor((amount * rate * 2 + 100_000) / 200_000);

export function perPeriod(seeded: Seeded, order: SeedOrder, renewing = false): number {
  const line = (renewing ? (order.next_price ?? order.price) : order.price) * order.quantity;
  const promo = seeded.promos.find((p) => p.id === order.promo_id);
  if (promo === undefined || promo.recurring !== 1) return line;
  if (promo.periods !== null && !promo.periods.includes(order.period)) return line;
  const discount = promo.type === 'percentage' ? Math.min(halfUpPercent(line, promo.value), line) : Math.min(promo.value, line);
  return line - discount;
}

const outOfTrial = (order: SeedOrder): boolean => order.trial_state === null || order.trial_state === 'ended';

export function mrrOf(seeded: Seeded, orders: readonly SeedOrder[]): Map<string, { mrr: number; arr: number; orders: number; amount: number }> {
  const sums = new Map<string, { scaled: bigint; orders: number; amount: number }>();
  for (const order of orders) {
    const amount = perPeriod(seeded, order);
    const entry = sums.get(order.currency) ?? { scaled: 0n, orders: 0, amount: 0 };
    entry.scaled += monthlyScaled(amount, order.period);
    entry.orders += 1;
    entry.amount += amount;
    sums.set(order.currency, entry);
  }
  return new Map([...sums].map(([currency, entry]) => [currency, { mrr: halfUp(entry.scaled), arr: halfUp(entry.scaled * 12n), orders: entry.orders, amount: entry.amount }]));
}

export const activeRecurring = (seeded: Seeded): SeedOrder[] => seeded.orders.filter((order) => order.status === 'active' && outOfTrial(order));

export function runningAt(seeded: Seeded, at: string): SeedOrder[] {
  return seeded.orders.filter(
    (order) =>
      order.status !== 'pending_setup' &&
      order.activated_at !== null &&
      order.activated_at <= at &&
      (order.canceled_at === null || order.canceled_at > at) &&
      (order.trial_ends_at === null || order.trial_ends_at <= at) &&
      !(order.status === 'suspended' && order.suspended_at !== null && order.suspended_at <= at),
  );
}

const inRange = (moment: string | null, start: string, end: string): moment is string => moment !== null && moment >= start && moment < end;
const wasPaid = (invoice: SeedInvoice): boolean => invoice.status === 'paid' || invoice.status === 'refunded';

export function revenueOf(seeded: Seeded, start: string, end: string, byMonth = false): Map<string, { paid: number; refunds: number; credit_notes: number; net: number }> {
  const out = new Map<string, { paid: number; refunds: number; credit_notes: number; net: number }>();
  const add = (moment: string, currency: string, field: 'paid' | 'refunds' | 'credit_notes', amount: number): void => {
    const key = `${byMonth ? moment.slice(0, 7) : ''}|${currency}`;
    const entry = out.get(key) ?? { paid: 0, refunds: 0, credit_notes: 0, net: 0 };
    entry[field] += amount;
    entry.net = entry.paid - entry.refunds - entry.credit_notes;
    out.set(key, entry);
  };
  for (const invoice of seeded.invoices) {
    if (!wasPaid(invoice) || !inRange(invoice.paid_at, start, end)) continue;
    const fromBalance = seeded.transactions.some((t) => t.invoice_id === invoice.id && t.type === 'payment' && t.gateway === 'credits');
    if (!fromBalance) add(invoice.paid_at, invoice.currency, 'paid', invoice.total);
  }
  for (const t of seeded.transactions) {
    if (t.type === 'refund' && t.status === 'refunded' && t.refund_of === null && t.gateway !== 'credits' && inRange(t.created_at, start, end)) add(t.created_at, t.currency, 'refunds', t.amount);
  }
  for (const note of seeded.notes) {
    if (note.method === 'balance' && inRange(note.created_at, start, end)) add(note.created_at, note.currency, 'credit_notes', note.total);
  }
  return out;
}

export function linesOf(seeded: Seeded, start: string, end: string, task: 'usage' | 'deposit'): Map<string, number> {
  const out = new Map<string, number>();
  for (const invoice of seeded.invoices) {
    if (!wasPaid(invoice) || !inRange(invoice.paid_at, start, end)) continue;
    for (const item of invoice.items) if (item.task === task) out.set(invoice.currency, (out.get(invoice.currency) ?? 0) + item.total);
  }
  return out;
}

export function failedOf(seeded: Seeded, start: string, end: string): { count: number; recovered: number } {
  const ids = new Set(seeded.transactions.filter((t) => t.type === 'payment' && t.status === 'failed' && inRange(t.created_at, start, end)).map((t) => t.invoice_id));
  const recovered = [...ids].filter((id) => wasPaid(seeded.invoices.find((invoice) => invoice.id === id)!)).length;
  return { count: ids.size, recovered };
}

export function churnedOf(seeded: Seeded, start: string, end: string): number {
  const lost = new Set<number>();
  for (const order of seeded.orders) {
    if (order.activated_at === null || !inRange(order.canceled_at, start, end)) continue;
    const keeps = seeded.orders.some((other) => other.client_id === order.client_id && other.activated_at !== null && other.activated_at < end && (other.canceled_at === null || other.canceled_at >= end));
    if (!keeps) lost.add(order.client_id);
  }
  return lost.size;
}

export const scheduledOf = (seeded: Seeded): SeedOrder[] => activeRecurring(seeded).filter((order) => order.cancel_at_period_end === 1);

export function renewalsOf(seeded: Seeded, from: string, to: string): { count: number; amounts: Map<string, number> } {
  const due = activeRecurring(seeded).filter((order) => order.cancel_at_period_end === 0 && order.expires_at !== null && order.expires_at >= from && order.expires_at < to);
  const amounts = new Map<string, number>();
  for (const order of due) amounts.set(order.currency, (amounts.get(order.currency) ?? 0) + perPeriod(seeded, order, true));
  return { count: due.length, amounts };
}
