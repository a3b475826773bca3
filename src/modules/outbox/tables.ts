// Tables of the outbox module (migration 008): one family for every side effect that leaves the process, and the
// attempts to deliver each. Only this module writes them.
import type { Generated } from 'kysely';

export type OutboxStatus = 'pending' | 'sent' | 'failed' | 'not_sent';
export type AttemptOutcome = 'sent' | 'error' | 'not_sent';

export interface OutboxMessageTable {
  id: Generated<number>;
  /** The handler that delivers it: `email`, later `webhook`, `charge`… */
  kind: string;
  /** JSON, read only by the kind's handler. */
  payload: string;
  dedupe_key: string | null;
  status: OutboxStatus;
  /** Attempts started so far (a claim counts as one, even when the process dies during it). */
  attempts: number;
  /** ISO 8601 with milliseconds: when the item is next due. */
  run_at: string;
  claim_token: string | null;
  claimed_until: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  /** When it was sent, gave up or was set aside (ISO 8601 with milliseconds). */
  done_at: string | null;
}

export interface OutboxAttemptTable {
  id: Generated<number>;
  outbox_id: number;
  attempt: number;
  outcome: AttemptOutcome;
  error: string | null;
  started_at: string;
  finished_at: string;
}

export interface OutboxTables {
  outbox_messages: OutboxMessageTable;
  outbox_attempts: OutboxAttemptTable;
}
