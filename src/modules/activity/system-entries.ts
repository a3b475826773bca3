// The system's own entries (docs/audit-log.md): the scheduler's changes that cut a customer off — suspensions at
// expiry and cancellations (at the period's end, after a long suspension) — each written in the transaction of the
// change; and the retention pruning the scheduler runs.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { ActivityService } from './service.ts';

export interface SystemEntries {
  system(trx: Kysely<Database>, change: { action: string; orderId: number; from: string; to: string; reason: string }): Promise<void>;
  prune(now: Date): Promise<number>;
}

export function createSystemEntries(deps: { activity: Pick<ActivityService, 'write' | 'prune'>; retentionDays: () => number }): SystemEntries {
  const { activity, retentionDays } = deps;
  return {
    async system(trx, change) {
      await activity.write(trx, {
        actorType: 'system',
        staff: null,
        ip: null,
        action: change.action,
        target: { type: 'order', id: String(change.orderId) },
        changes: [{ field: 'status', from: change.from, to: change.to }],
        message: `${change.action} on order #${change.orderId}: ${change.reason}`,
      });
    },
    prune: (now) => activity.prune(now, retentionDays()),
  };
}
