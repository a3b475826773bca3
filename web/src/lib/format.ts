// Display helpers: dates, money, labels, custom parameter values. Money stays a decimal string; sums are done in
// integer minor units (BigInt), never in floating point.
import { trialOf, trialText } from '../../../src/lib/trial.ts';

/** `2026-11-22T10:00:00Z` → `2026-11-22 10:00 UTC`; blank → `—`. */
export function formatDateTime(iso: string | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '—';
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match === null ? iso : `${match[1]} ${match[2]} UTC`;
}

export function formatDate(iso: string | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '—';
  return iso.slice(0, 10);
}

export function formatMoney(amount: string | number | null | undefined, currency?: string | null): string {
  if (amount === null || amount === undefined) return '—';
  return currency ? `${amount} ${currency}` : String(amount);
}

export function formatNumber(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : value.toLocaleString('en-US');
}

/** A decimal string as minor units with its number of decimals: "10.50" → {units: 1050n, scale: 2}. */
export function toMinor(amount: string | number): { units: bigint; scale: number } {
  const text = String(amount).trim();
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) return { units: 0n, scale: 0 };
  const fraction = match[3] ?? '';
  const units = BigInt(`${match[2]}${fraction}`) * (match[1] === '-' ? -1n : 1n);
  return { units, scale: fraction.length };
}

/** Sums decimal strings exactly and returns a decimal string with the largest scale seen. */
export function sumMoney(amounts: readonly (string | number)[]): string {
  const parsed = amounts.map(toMinor);
  const scale = parsed.reduce((max, item) => Math.max(max, item.scale), 0);
  let total = 0n;
  for (const item of parsed) total += item.units * 10n ** BigInt(scale - item.scale);
  const negative = total < 0n;
  const digits = (negative ? -total : total).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const text = scale === 0 ? whole : `${whole}.${digits.slice(digits.length - scale)}`;
  return negative ? `-${text}` : text;
}

export function isZeroMoney(amount: string | number | null | undefined): boolean {
  return amount === null || amount === undefined || toMinor(amount).units === 0n;
}

/** `monthlyLimit` → `Monthly limit`, `max_requests` → `Max requests`. */
export function humanize(name: string): string {
  const spaced = name
    .replace(/^custom_/, '')
    .replace(/[_-]+/g, ' ')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .trim();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

/** A custom parameter value for display: numbers grouped, booleans as Yes/No, objects as JSON. */
export function formatValue(value: unknown): string {
  if (typeof value === 'number') return value.toLocaleString('en-US');
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** Text typed into a custom parameter field → its JSON value: `1000` → 1000, `true` → true, `pro` → "pro". */
export function parseValue(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return '';
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return text;
  }
}

/** The inverse of parseValue, for editing. */
export function valueToText(value: unknown): string {
  return typeof value === 'string' && parseValue(value) === value ? value : JSON.stringify(value);
}

export const STATUS_LABELS: Record<string, string> = {
  pending_setup: 'Pending setup',
  failed_setup: 'Setup failed',
  active: 'Active',
  suspended: 'Suspended',
  canceled: 'Canceled',
  unpaid: 'Unpaid',
  paid: 'Paid',
  refunded: 'Refunded',
  enabled: 'Enabled',
  disabled: 'Disabled',
  inactive: 'Inactive',
  processed: 'Processed',
  failed: 'Failed',
  error: 'Error',
  pending: 'Pending',
  delivered: 'Delivered',
  valid: 'Valid',
  invalid: 'Not valid',
};

export function statusLabel(status: string | null | undefined): string {
  if (status === null || status === undefined) return '—';
  return STATUS_LABELS[status] ?? humanize(status);
}

export const REASON_LABELS: Record<string, string> = {
  VALID: 'Every condition is met',
  NOT_FOUND: 'Unknown key',
  DISABLED: 'Switched off by the administrator',
  CLIENT_INACTIVE: "The client's account is suspended or canceled",
  NOT_ACTIVE: 'The order is not active',
  EXPIRED: 'The order has expired',
  LIMIT_EXCEEDED: 'The monthly limit is used up',
  RATE_LIMITED: "Too many checks in a short time (the plan's rate limit)",
  TRIAL_ENDED: 'The free trial ended; the first invoice is unpaid',
};

/** "7-day free trial, no card needed" for a plan whose public config offers a trial (issue 24 item 7); null otherwise. */
export function trialWording(config: Record<string, unknown> | null | undefined): string | null {
  const trial = trialOf(config ?? {});
  return trial === null ? null : trialText(trial);
}

/** "Free trial until 2026-12-01" while an order's free trial runs; null otherwise. */
export function trialBadge(order: { on_trial?: boolean; trial_ends_at?: string | null }): string | null {
  return order.on_trial === true && order.trial_ends_at ? `Free trial until ${formatDate(order.trial_ends_at)}` : null;
}

/** "Cancels at period end (2026-12-01)" for an order its client canceled to end at its expiry; null otherwise. */
export function cancelsAtPeriodEnd(order: { cancel_at_period_end?: boolean | null; expires_at?: string | null; status?: string }): string | null {
  if (order.cancel_at_period_end !== true || order.status === 'canceled') return null;
  return `Cancels at period end (${formatDate(order.expires_at)})`;
}
