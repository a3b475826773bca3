// client and admin serviceapikey/usage (CONTRACT §7.1, §12): uses per day over a range of an order's keys (deleted
// ones included: their uses stay the order's), or of one of them, with this process's unflushed counts.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { errors } from '../../../platform/errors.ts';
import { monthBounds, type Metering } from './metering.ts';

/** The built-in `calls` meter's part of the answer: uses per day and their total over the range. */
export interface CallsReport {
  total: number;
  days: Array<{ date: string; count: number }>;
}

const MAX_USAGE_DAYS = 366;
const DAY_MS = 86_400_000;

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * Usage per day over [from, to] (default: `current`, the days of the order's current usage period, else the current
 * month): the whole order, or one key with `key_id`.
 */
export async function usageReport(
  db: Kysely<Database>,
  metering: Pick<Metering, 'clock' | 'unflushed'>,
  params: { order_id: number; key_id?: number | undefined; from?: string | undefined; to?: string | undefined },
  clientId?: number,
  current?: { from: string; to: string },
): Promise<CallsReport> {
  let owned = db.selectFrom('api_keys').select(['id', 'deleted_at']).where('order_id', '=', params.order_id);
  if (clientId !== undefined) owned = owned.where('client_id', '=', clientId);
  const keys = await owned.execute();
  if (!keys.some((key) => key.deleted_at === null)) throw errors.apiKeyNotFound();
  let ids = keys.map((key) => key.id);
  if (params.key_id !== undefined) {
    if (!ids.includes(params.key_id)) throw errors.apiKeyNotFound();
    ids = [params.key_id];
  }
  const clock = metering.clock(Date.now());
  const from = params.from ?? current?.from ?? clock.monthStart;
  const to = params.to ?? (params.from === undefined ? (current?.to ?? clock.monthEnd) : monthBounds(params.from.slice(0, 7)).end);
  const fromMs = Date.parse(`${from}T00:00:00Z`);
  const toMs = Date.parse(`${to}T00:00:00Z`);
  if (Number.isNaN(fromMs) || isoDay(fromMs) !== from) throw errors.invalid('from', 'must be a calendar date YYYY-MM-DD');
  if (Number.isNaN(toMs) || isoDay(toMs) !== to) throw errors.invalid('to', 'must be a calendar date YYYY-MM-DD');
  if (toMs < fromMs) throw errors.invalid('to', 'must not be before from');
  if ((toMs - fromMs) / DAY_MS + 1 > MAX_USAGE_DAYS) throw errors.invalid('to', `must be at most ${MAX_USAGE_DAYS} days after from`);
  const rows = await db.selectFrom('api_key_usage').select(['day', 'count']).where('api_key_id', 'in', ids).where('day', '>=', from).where('day', '<=', to).execute();
  const counts = new Map<string, number>();
  for (const id of ids) for (const [day, count] of metering.unflushed(id, from, to)) counts.set(day, (counts.get(day) ?? 0) + count);
  for (const row of rows) counts.set(row.day, (counts.get(row.day) ?? 0) + row.count);
  const days: CallsReport['days'] = [];
  let total = 0;
  for (let ms = fromMs; ms <= toMs; ms += DAY_MS) {
    const date = isoDay(ms);
    const count = counts.get(date) ?? 0;
    total += count;
    days.push({ date, count });
  }
  return { total, days };
}
