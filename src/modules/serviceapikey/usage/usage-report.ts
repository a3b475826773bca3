// admin/serviceapikey/report_usage (CONTRACT §11): uses an SDK answered from its own cache, added to the keys' usage.
// All or nothing, exactly once: the batch id, the validation of every key id and the counts are one transaction, and
// the batch id is the table's primary key, so a retried (or concurrent duplicate) batch adds nothing.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import { errors } from '../../../platform/errors.ts';
import { nowIso } from '../../../lib/time.ts';
import { monthlyLimitOf } from '../options.ts';
import { addPeriodUses } from './period-usage.ts';
import { usagePeriodAt } from './usage-period.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';
import type { OverageRule } from '../../../lib/usage-pricing.ts';
import { parseObject } from '../../../lib/json.ts';

export interface UsageItem {
  key_id: number;
  count: number;
}

export interface AddedUsage {
  id: number;
  order_id: number;
  key_hash: string;
  count: number;
  limit: number | null;
  enforceLimit: boolean;
  /** The key's usage period now, which the uses were added to, and its plan's stops. */
  periodStart: string;
  periodEnd: string;
  included: number | null;
  hardLimit: number | null;
  overage: OverageRule | null;
}

/** Adds the batch's uses to `day`; returns what it added per key (empty when the batch was seen before). */
export async function reportUsage(
  db: Kysely<Database>,
  input: { batchId: string; usage: readonly UsageItem[]; staffId: number; day: string; now: number },
): Promise<AddedUsage[]> {
  // The same key twice in one batch is summed.
  const counts = new Map<number, number>();
  for (const item of input.usage) counts.set(item.key_id, (counts.get(item.key_id) ?? 0) + item.count);
  let total = 0;
  for (const count of counts.values()) total += count;
  if (!Number.isSafeInteger(total) || total > 2_000_000_000) throw errors.invalid('usage', 'adds too many uses in one batch');

  return inTransaction(db, async (trx) => {
    const ids = [...counts.keys()];
    const keys =
      ids.length === 0
        ? []
        : await trx
            .selectFrom('api_keys')
            .innerJoin('orders', 'orders.id', 'api_keys.order_id')
            .select(['api_keys.id', 'api_keys.order_id', 'api_keys.key_hash', 'api_keys.config', 'api_keys.options', 'orders.period', 'orders.expires_at'])
            .where('api_keys.id', 'in', ids)
            .execute();
    if (keys.length !== ids.length) {
      const known = new Set(keys.map((key) => key.id));
      const index = input.usage.findIndex((item) => !known.has(item.key_id));
      throw errors.invalid(`usage.${index}.key_id`, 'is not a key of this installation');
    }
    const inserted = await trx
      .insertInto('api_key_usage_batches')
      .values({ batch_id: input.batchId, staff_id: input.staffId, uses: total, created_at: nowIso() })
      .onConflict((oc) => oc.column('batch_id').doNothing())
      .returning('batch_id')
      .executeTakeFirst();
    if (inserted === undefined) return [];
    if (keys.length > 0) {
      await trx
        .insertInto('api_key_usage')
        .values(keys.map((key) => ({ api_key_id: key.id, day: input.day, count: counts.get(key.id)! })))
        .onConflict((oc) => oc.columns(['api_key_id', 'day']).doUpdateSet({ count: sql<number>`api_key_usage.count + excluded.count` }))
        .execute();
    }
    const added = keys.map((key): AddedUsage => {
      const options = parseObject(key.options);
      const config = parseObject(key.config);
      const plan = planOf(usageOptionsOf(options), config);
      const period = usagePeriodAt(plan.period, input.now, { period: key.period, expiresAtMs: key.expires_at === null ? null : Date.parse(key.expires_at) }, plan.anchor ?? null);
      return {
        id: key.id,
        order_id: key.order_id,
        key_hash: key.key_hash,
        count: counts.get(key.id)!,
        limit: monthlyLimitOf(config),
        enforceLimit: options.enforce_limit === true,
        periodStart: period.start,
        periodEnd: period.end,
        included: plan.included,
        hardLimit: plan.hardLimit,
        overage: plan.overage,
      };
    });
    await addPeriodUses(trx, added.map((key) => ({ api_key_id: key.id, period_start: key.periodStart, period_end: key.periodEnd, count: key.count })));
    return added;
  });
}
