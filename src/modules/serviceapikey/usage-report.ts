// admin/serviceapikey/report_usage (CONTRACT §11): uses an SDK answered from its own cache, added to the keys' usage.
// All or nothing, exactly once: the batch id, the validation of every key id and the counts are one transaction, and
// the batch id is the table's primary key, so a retried (or concurrent duplicate) batch adds nothing.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../db/transaction.ts';
import { errors } from '../../http/errors.ts';
import { nowIso } from '../../lib/time.ts';
import { monthlyLimitOf } from './options.ts';

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
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Adds the batch's uses to `day`; returns what it added per key (empty when the batch was seen before). */
export async function reportUsage(
  db: Kysely<Database>,
  input: { batchId: string; usage: readonly UsageItem[]; staffId: number; day: string },
): Promise<AddedUsage[]> {
  // The same key twice in one batch is summed.
  const counts = new Map<number, number>();
  for (const item of input.usage) counts.set(item.key_id, (counts.get(item.key_id) ?? 0) + item.count);
  let total = 0;
  for (const count of counts.values()) total += count;
  if (!Number.isSafeInteger(total) || total > 2_000_000_000) throw errors.invalid('usage', 'adds too many uses in one batch');

  return inTransaction(db, async (trx) => {
    const ids = [...counts.keys()];
    const keys = ids.length === 0 ? [] : await trx.selectFrom('api_keys').select(['id', 'order_id', 'key_hash', 'config', 'options']).where('id', 'in', ids).execute();
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
    return keys.map((key) => ({
      id: key.id,
      order_id: key.order_id,
      key_hash: key.key_hash,
      count: counts.get(key.id)!,
      limit: monthlyLimitOf(parseObject(key.config)),
      enforceLimit: parseObject(key.options).enforce_limit === true,
    }));
  });
}
