// The flush of key analytics (issue 25): the minutes the tally took become rows — each key's answers in its minute,
// hour and day buckets, unknown-key lookups per address in the same three, each key's last use — and are added to the
// tables with one upsert per bucket row (count = count + n), so several processes' flushes add up. Rows are written in
// a fixed order (unit, at, key), so two processes flushing at once never lock each other's rows in opposite orders.
// A chunk that fails stays pending and is merged into the next flush: a count is written once, never lost to an error.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { bucketAt, bucketStart, KEY_OUTCOMES, UNITS, zeroCounts, type OutcomeCounts, type Unit } from './outcomes.ts';
import type { MinuteTally } from './tally.ts';

const CHUNK_ROWS = 400;

export interface OutcomeRow extends OutcomeCounts {
  api_key_id: number;
  unit: Unit;
  at: string;
}

interface LastUseRow {
  api_key_id: number;
  at: string;
  ip: string | null;
}

interface NotFoundRow {
  ip: string;
  unit: Unit;
  at: string;
  count: number;
}

function isForeignKeyViolation(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** Rows not yet written, keyed so a retry merges with what was counted since. */
export class PendingRows {
  readonly outcomes = new Map<string, OutcomeRow>();
  readonly lastUse = new Map<number, LastUseRow & { ms: number }>();
  readonly notFound = new Map<string, NotFoundRow>();

  get size(): number {
    return this.outcomes.size + this.lastUse.size + this.notFound.size;
  }

  add(minutes: readonly MinuteTally[]): void {
    for (const { minute, keys, notFound } of minutes) {
      for (const unit of UNITS) {
        const at = bucketAt(bucketStart(minute, unit));
        for (const [keyId, tally] of keys) {
          const id = `${unit} ${at} ${keyId}`;
          let row = this.outcomes.get(id);
          if (row === undefined) {
            row = { api_key_id: keyId, unit, at, ...zeroCounts() };
            this.outcomes.set(id, row);
          }
          for (const outcome of KEY_OUTCOMES) row[outcome] += tally.counts[outcome];
        }
        for (const [ip, count] of notFound) {
          const id = `${unit} ${at} ${ip}`;
          const row = this.notFound.get(id);
          if (row === undefined) this.notFound.set(id, { ip, unit, at, count });
          else row.count += count;
        }
      }
      for (const [keyId, tally] of keys) {
        const seen = this.lastUse.get(keyId);
        if (seen === undefined || seen.ms <= tally.lastAt) {
          this.lastUse.set(keyId, { api_key_id: keyId, at: new Date(tally.lastAt).toISOString(), ip: tally.lastIp, ms: tally.lastAt });
        }
      }
    }
  }
}

function byBucket<T extends { unit: string; at: string }>(a: T, b: T): number {
  return a.unit < b.unit ? -1 : a.unit > b.unit ? 1 : a.at < b.at ? -1 : a.at > b.at ? 1 : 0;
}

async function upsertOutcomes(db: Kysely<Database>, rows: OutcomeRow[]): Promise<void> {
  const added = Object.fromEntries(KEY_OUTCOMES.map((column) => [column, sql<number>`${sql.ref(`api_key_outcomes.${column}`)} + ${sql.ref(`excluded.${column}`)}`]));
  await db
    .insertInto('api_key_outcomes')
    .values(rows)
    .onConflict((oc) => oc.columns(['api_key_id', 'unit', 'at']).doUpdateSet(added))
    .execute();
}

async function upsertLastUse(db: Kysely<Database>, rows: LastUseRow[]): Promise<void> {
  await db
    .insertInto('api_key_last_use')
    .values(rows)
    .onConflict((oc) =>
      oc
        .column('api_key_id')
        // Another process may have written a later use already: the latest stays.
        .doUpdateSet({ at: sql<string>`excluded.at`, ip: sql<string | null>`excluded.ip` })
        .where('api_key_last_use.at', '<', sql<string>`excluded.at`),
    )
    .execute();
}

async function upsertNotFound(db: Kysely<Database>, rows: NotFoundRow[]): Promise<void> {
  await db
    .insertInto('api_key_not_found')
    .values(rows)
    .onConflict((oc) => oc.columns(['unit', 'at', 'ip']).doUpdateSet({ count: sql<number>`api_key_not_found.count + excluded.count` }))
    .execute();
}

/**
 * Writes `rows` chunk by chunk, deleting each written row from `pending` under its `idOf`. A chunk refused for a key
 * deleted since it was counted is written row by row, the deleted key's rows dropped. Throws on any other failure,
 * the rows not written still pending.
 */
async function writeChunks<T>(rows: T[], pending: Map<string | number, T>, idOf: (row: T) => string | number, upsert: (rows: T[]) => Promise<void>): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK_ROWS) {
    const chunk = rows.slice(i, i + CHUNK_ROWS);
    try {
      await upsert(chunk);
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error;
      for (const row of chunk) {
        try {
          await upsert([row]);
        } catch (rowError) {
          if (!isForeignKeyViolation(rowError)) throw rowError;
        }
        pending.delete(idOf(row));
      }
      continue;
    }
    for (const row of chunk) pending.delete(idOf(row));
  }
}

/** Writes every pending row (outcomes, then lookups of unknown keys, then last uses). */
export async function writePending(db: Kysely<Database>, pending: PendingRows): Promise<void> {
  const outcomes = [...pending.outcomes.values()].toSorted((a, b) => byBucket(a, b) || a.api_key_id - b.api_key_id);
  await writeChunks(outcomes, pending.outcomes as Map<string | number, OutcomeRow>, (row) => `${row.unit} ${row.at} ${row.api_key_id}`, (rows) => upsertOutcomes(db, rows));
  const notFound = [...pending.notFound.values()].toSorted((a, b) => byBucket(a, b) || (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : 0));
  await writeChunks(notFound, pending.notFound as Map<string | number, NotFoundRow>, (row) => `${row.unit} ${row.at} ${row.ip}`, (rows) => upsertNotFound(db, rows));
  const lastUse = [...pending.lastUse.values()].toSorted((a, b) => a.api_key_id - b.api_key_id);
  await writeChunks(lastUse, pending.lastUse as Map<string | number, LastUseRow & { ms: number }>, (row) => row.api_key_id, (rows) =>
    upsertLastUse(
      db,
      rows.map(({ api_key_id, at, ip }) => ({ api_key_id, at, ip })),
    ),
  );
}
