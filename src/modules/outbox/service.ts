// The outbox (CONTRACT §10, DESIGN "Growing the house"): one table family and one sender loop for every side effect
// that leaves the process. A change writes its item with `enqueue(trx, …)` inside its own transaction, so the item
// exists exactly when the change does; the sender delivers it afterwards through the handler registered for its kind
// (e-mail today, webhook deliveries and off-session charges later).
//
// Claiming is a compare-and-set: one UPDATE takes due, unclaimed items and stamps them with this sender's token and a
// lease (PostgreSQL picks the rows with FOR UPDATE SKIP LOCKED; SQLite has a single writer). Finishing is a
// compare-and-set on that token. A sender that dies mid-delivery leaves a claim whose lease runs out; the next sender
// takes the item over and delivers it again — handlers make that safe (the e-mail keeps its Message-ID).
//
// Each start of a delivery counts as an attempt. After a failed attempt n the item waits `retryDelaysMs[n-1]`; when
// the delays are used up it is `failed`. A handler throws OutboxNotSent when there is nowhere to deliver (no SMTP
// configured): the item is set aside as `not_sent`, not retried.
import { randomBytes } from 'node:crypto';
import { sql, type Kysely, type QueryCreator } from 'kysely';
import type { DialectName } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { OutboxStatus } from './tables.ts';
import { afterTransaction, inTransaction } from '../../platform/transaction.ts';

export interface OutboxContext {
  /** The outbox item's id (stable across attempts). */
  id: number;
  /** 1 for the first attempt. */
  attempt: number;
}

export interface OutboxHandler {
  deliver(payload: unknown, context: OutboxContext): Promise<void>;
  /** Wait before retry n (after failed attempt n); an item fails for good after retryDelaysMs.length + 1 attempts. */
  retryDelaysMs: readonly number[];
}

export interface OutboxItem {
  kind: string;
  payload: unknown;
  /** Not before this moment (default: now). */
  runAt?: Date;
  /** A second enqueue with the same key returns the first item's id and adds nothing. */
  dedupeKey?: string;
}

/** Thrown by a handler: there is no transport to deliver through; the item becomes `not_sent` and is not retried. */
export class OutboxNotSent extends Error {
  constructor(message = 'no transport configured') {
    super(message);
    this.name = 'OutboxNotSent';
  }
}

/** Thrown by a handler: retrying cannot help (e.g. the endpoint is gone); the item becomes `failed` at once. */
export class OutboxGiveUp extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboxGiveUp';
  }
}

export interface OutboxItemState {
  id: number;
  kind: string;
  status: OutboxStatus;
  attempts: number;
  last_error: string | null;
  /** When the next attempt is due, for pending items. */
  run_at: string;
  done_at: string | null;
}

export type OutboxLog = (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => void;

export interface OutboxServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  /** How long a claim holds before another sender may take the item over (default 5 minutes). */
  leaseMs?: number;
  /** How often the loop looks for due items when nothing wakes it (default 5 s). */
  pollMs?: number;
  /** Items claimed at once, and delivered at the same time, per round. */
  batchSize?: number;
  log?: OutboxLog;
}

const MAX_ERROR_LENGTH = 1000;
/** A runDue call stops after this many rounds, so a flood cannot keep one call going forever; the loop calls again. */
const MAX_ROUNDS = 1000;

/** ISO 8601 with milliseconds: the outbox's times sort as text at sub-second resolution. */
const iso = (date: Date): string => date.toISOString();

/** The last error, short and on one line: it is shown to staff, so it is cut and never carries a stack. */
function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s+/g, ' ').trim().slice(0, MAX_ERROR_LENGTH) || 'unknown error';
}

/** A JSON line on stderr (warnings, errors) in the server's log format. */
export const defaultOutboxLog: OutboxLog = (level, message, details = {}) => {
  const numeric = level === 'info' ? 30 : level === 'warn' ? 40 : 50;
  const line = `${JSON.stringify({ level: numeric, time: Date.now(), msg: message, ...details })}\n`;
  if (level === 'info') process.stdout.write(line);
  else process.stderr.write(line);
};

export function createOutboxService(deps: OutboxServiceDeps) {
  const { db, dialect } = deps;
  const leaseMs = deps.leaseMs ?? 5 * 60_000;
  const pollMs = deps.pollMs ?? 5000;
  const batchSize = deps.batchSize ?? 10;
  const log = deps.log ?? defaultOutboxLog;
  const handlers = new Map<string, OutboxHandler>();

  // The loop's state: at most one runDue at a time per process; a wake-up during a run asks for another run.
  let started = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;
  let again = false;

  function tick(): void {
    if (!started || stopped) return;
    if (running !== null) {
      again = true;
      return;
    }
    // The loop stops between rounds once stop() is called, so shutdown waits for one batch, not the whole queue.
    running = runRounds(undefined, () => stopped)
      .then(() => undefined)
      .catch((error: unknown) => log('error', 'outbox: sending failed', { error: describe(error) }))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          tick();
        }
      });
  }

  /** Takes up to `limit` due items of the registered kinds for this sender; returns them with their new attempt number. */
  async function claim(now: Date, limit: number): Promise<Array<{ id: number; kind: string; payload: string; attempts: number; token: string }>> {
    const kinds = [...handlers.keys()];
    if (kinds.length === 0) return [];
    const token = randomBytes(12).toString('hex');
    const nowText = iso(now);
    const due = (qc: QueryCreator<Database>) => {
      const query = qc
        .selectFrom('outbox_messages')
        .select('id')
        .where('status', '=', 'pending')
        .where('run_at', '<=', nowText)
        .where('kind', 'in', kinds)
        .where((w) => w.or([w('claimed_until', 'is', null), w('claimed_until', '<', nowText)]))
        .orderBy('run_at')
        .orderBy('id')
        .limit(limit);
      // PostgreSQL: senders in other processes skip the rows this one is claiming instead of waiting for them.
      return dialect === 'postgres' ? query.forUpdate().skipLocked() : query;
    };
    // The candidates are a CTE, not a plain `id IN (subquery)`: PostgreSQL may rescan such a subquery during the
    // semi-join, and with SKIP LOCKED every rescan finds other rows, so one claim could take far more than `limit`
    // (measured: 180 of 200). A CTE that locks rows is evaluated exactly once.
    const rows = await db
      .with('due', due)
      .updateTable('outbox_messages')
      .set((eb) => ({ claim_token: token, claimed_until: iso(new Date(now.getTime() + leaseMs)), attempts: eb('attempts', '+', 1), updated_at: nowText }))
      .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id'))
      // The same conditions again: the compare-and-set itself, whatever the candidates' snapshot saw.
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', nowText)]))
      .returning(['id', 'kind', 'payload', 'attempts'])
      .execute();
    return rows.map((row) => ({ ...row, token }));
  }

  /** Records the end of an attempt and moves the item on — only while this sender's claim still holds. */
  async function finish(
    item: { id: number; attempts: number; token: string },
    startedAt: Date,
    outcome: { kind: 'sent' } | { kind: 'not_sent'; error: string } | { kind: 'error'; error: string; retryAt: Date | null },
  ): Promise<void> {
    const finishedAt = new Date(Math.max(Date.now(), startedAt.getTime()));
    const at = iso(finishedAt);
    await inTransaction(db, async (trx) => {
      const status: OutboxStatus =
        outcome.kind === 'sent' ? 'sent' : outcome.kind === 'not_sent' ? 'not_sent' : outcome.retryAt === null ? 'failed' : 'pending';
      const result = await trx
        .updateTable('outbox_messages')
        .set({
          status,
          claim_token: null,
          claimed_until: null,
          updated_at: at,
          last_error: outcome.kind === 'sent' ? null : outcome.error,
          ...(status === 'pending' && outcome.kind === 'error' && outcome.retryAt !== null ? { run_at: iso(outcome.retryAt) } : { done_at: at }),
        })
        .where('id', '=', item.id)
        .where('claim_token', '=', item.token)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) {
        // Our lease ran out and another sender took the item over; it decides the outcome. Say so, keep the record.
        log('warn', 'outbox: an attempt finished after its claim expired', { id: item.id, attempt: item.attempts });
      }
      await trx
        .insertInto('outbox_attempts')
        .values({
          outbox_id: item.id,
          attempt: item.attempts,
          outcome: outcome.kind,
          error: outcome.kind === 'sent' ? null : outcome.error,
          started_at: iso(startedAt),
          finished_at: at,
        })
        .execute();
    });
  }

  async function deliverOne(item: { id: number; kind: string; payload: string; attempts: number; token: string }, now: Date): Promise<void> {
    const handler = handlers.get(item.kind)!;
    const startedAt = new Date();
    try {
      await handler.deliver(JSON.parse(item.payload) as unknown, { id: item.id, attempt: item.attempts });
      await finish(item, startedAt, { kind: 'sent' });
    } catch (error) {
      if (error instanceof OutboxNotSent) {
        await finish(item, startedAt, { kind: 'not_sent', error: describe(error) });
        return;
      }
      const delay = error instanceof OutboxGiveUp ? undefined : handler.retryDelaysMs[item.attempts - 1];
      // Retries count from the time the attempt was due to run, so a test's clock (runDue(now)) decides them.
      const retryAt = delay === undefined ? null : new Date(now.getTime() + delay);
      await finish(item, startedAt, { kind: 'error', error: describe(error), retryAt });
    }
  }

  async function runRounds(now: Date | undefined, stop: () => boolean): Promise<number> {
    let delivered = 0;
    for (let round = 0; round < MAX_ROUNDS && !stop(); round++) {
      const at = now ?? new Date();
      const items = await claim(at, batchSize);
      if (items.length === 0) break;
      // One item's failure to record its outcome (database gone) must not stop the others; its lease will expire.
      const results = await Promise.allSettled(items.map((item) => deliverOne(item, at)));
      for (const result of results) {
        if (result.status === 'rejected') log('error', 'outbox: could not record an attempt', { error: describe(result.reason) });
      }
      delivered += items.length;
    }
    return delivered;
  }

  return {
    /** Declares how items of `kind` are delivered; the sender claims only kinds it knows. */
    registerKind(kind: string, handler: OutboxHandler): void {
      if (handlers.has(kind)) throw new Error(`outbox kind "${kind}" is registered twice`);
      handlers.set(kind, handler);
    },

    /**
     * Writes an item in the caller's transaction and wakes the sender once it has committed. Returns the item's id
     * (the existing item's, when `dedupeKey` was seen before).
     */
    async enqueue(trx: Kysely<Database>, item: OutboxItem): Promise<number> {
      const now = new Date();
      const values = {
        kind: item.kind,
        payload: JSON.stringify(item.payload ?? null),
        dedupe_key: item.dedupeKey ?? null,
        status: 'pending' as const,
        attempts: 0,
        run_at: iso(item.runAt ?? now),
        claim_token: null,
        claimed_until: null,
        last_error: null,
        created_at: iso(now),
        updated_at: iso(now),
        done_at: null,
      };
      let id: number;
      if (item.dedupeKey === undefined) {
        id = (await trx.insertInto('outbox_messages').values(values).returning('id').executeTakeFirstOrThrow()).id;
      } else {
        const inserted = await trx
          .insertInto('outbox_messages')
          .values(values)
          .onConflict((conflict) => conflict.column('dedupe_key').doNothing())
          .returning('id')
          .executeTakeFirst();
        if (inserted !== undefined) id = inserted.id;
        else id = (await trx.selectFrom('outbox_messages').select('id').where('dedupe_key', '=', item.dedupeKey).executeTakeFirstOrThrow()).id;
      }
      afterTransaction(trx, (committed) => {
        if (committed) tick();
      });
      return id;
    },

    /** Delivers every item due at `now` (default: the time of each round); returns how many attempts it made. */
    runDue: (now?: Date): Promise<number> => runRounds(now, () => false),

    /**
     * The latest item (by due time) whose dedupe key starts with `prefix`: how a caller that keeps one replaceable,
     * delayed item per subject (the key validity notices) finds whether one is still waiting and when the last went.
     */
    async latestWithKeyPrefix(trx: Kysely<Database>, prefix: string): Promise<{ id: number; status: OutboxStatus; run_at: string; claimed: boolean } | undefined> {
      // `%` and `_` in the prefix are literal characters here, not wildcards.
      const pattern = `${prefix.replace(/[\\%_]/g, '\\$&')}%`;
      const row = await trx
        .selectFrom('outbox_messages')
        .select(['id', 'status', 'run_at', 'claimed_until'])
        .where(sql<boolean>`dedupe_key like ${pattern} escape '\\'`)
        .orderBy('run_at', 'desc')
        .orderBy('id', 'desc')
        .executeTakeFirst();
      return row === undefined ? undefined : { id: row.id, status: row.status, run_at: row.run_at, claimed: row.claimed_until !== null };
    },

    /** Whether the dedupe key has an item already (so a caller can skip rendering work it would throw away). */
    async hasDedupeKey(trx: Kysely<Database>, key: string): Promise<boolean> {
      return (await trx.selectFrom('outbox_messages').select('id').where('dedupe_key', '=', key).executeTakeFirst()) !== undefined;
    },

    /** Which of these dedupe keys have an item already (one query for a whole batch of candidates). */
    async existingDedupeKeys(keys: readonly string[]): Promise<Set<string>> {
      const found = new Set<string>();
      for (let start = 0; start < keys.length; start += 500) {
        const rows = await db
          .selectFrom('outbox_messages')
          .select('dedupe_key')
          .where('dedupe_key', 'in', keys.slice(start, start + 500))
          .execute();
        for (const row of rows) if (row.dedupe_key !== null) found.add(row.dedupe_key);
      }
      return found;
    },

    /** The delivery state of items, by id. */
    async states(ids: readonly number[]): Promise<Map<number, OutboxItemState>> {
      if (ids.length === 0) return new Map();
      const rows = await db
        .selectFrom('outbox_messages')
        .select(['id', 'kind', 'status', 'attempts', 'last_error', 'run_at', 'done_at'])
        .where('id', 'in', [...ids])
        .execute();
      return new Map(rows.map((row) => [row.id, row]));
    },

    /** Each attempt of an item, oldest first. */
    async attempts(id: number): Promise<Array<{ attempt: number; outcome: string; error: string | null; started_at: string; finished_at: string }>> {
      return db
        .selectFrom('outbox_attempts')
        .select(['attempt', 'outcome', 'error', 'started_at', 'finished_at'])
        .where('outbox_id', '=', id)
        .orderBy('id')
        .execute();
    },

    /** Items per kind and status (outbox depth and failures, for monitoring). */
    async counts(): Promise<Array<{ kind: string; status: OutboxStatus; count: number }>> {
      const rows = await db
        .selectFrom('outbox_messages')
        .select((eb) => ['kind', 'status', eb.fn.countAll<number>().as('count')])
        .groupBy(['kind', 'status'])
        .orderBy('kind')
        .orderBy('status')
        .execute();
      return rows;
    },

    /** Items of `kind` not delivered yet: queued (`pending`) or set aside for want of a transport (`not_sent`). */
    async countUndelivered(kind: string): Promise<number> {
      const row = await db
        .selectFrom('outbox_messages')
        // PostgreSQL answers count(*) as text (bigint), SQLite as a number.
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('kind', '=', kind)
        .where('status', 'in', ['pending', 'not_sent'])
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    /**
     * Puts the items of `kind` set aside as `not_sent` for one of `reasons` back in the queue (a transport exists now), and
     * wakes the sender. A compare-and-set on the status: two processes releasing at once release each item once.
     */
    async releaseNotSent(kind: string, reasons: readonly string[]): Promise<number> {
      const now = iso(new Date());
      const result = await db
        .updateTable('outbox_messages')
        .set({ status: 'pending', run_at: now, done_at: null, claim_token: null, claimed_until: null, updated_at: now })
        .where('kind', '=', kind)
        .where('status', '=', 'not_sent')
        .where('last_error', 'in', [...reasons])
        .executeTakeFirst();
      const released = Number(result.numUpdatedRows);
      // Woken once the release is visible: inside a changing admin action (settings_update) that is the action's
      // commit; a sender woken before would find nothing to send, or run inside the action's transaction.
      if (released > 0) afterTransaction(db, (committed) => {
        if (committed) tick();
      });
      return released;
    },

    /** Starts the sender loop: a run now (items left by a previous process), then on every wake-up and poll. */
    start(): void {
      if (started || stopped) return;
      started = true;
      timer = setInterval(tick, pollMs);
      timer.unref();
      tick();
    },

    /** Stops the loop and waits for the run in progress, so shutdown never cuts a delivery's bookkeeping short. */
    async stop(): Promise<void> {
      stopped = true;
      if (timer !== undefined) clearInterval(timer);
      // Once stopped, the run's own `finally` starts no other run: one wait is enough.
      if (running !== null) await running;
    },
  };
}

export type OutboxService = ReturnType<typeof createOutboxService>;
