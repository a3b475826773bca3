// Usage metering (CONTRACT §7.1). Each process aggregates its counts in memory (key id → count, per UTC day) and
// upserts them into api_key_usage at least once a second and on shutdown, so counting costs check a Map update and
// never a round trip. Several processes each flush their own counts; the database row is their sum
// (count = count + n), and the current month's usage is the database total plus this process's unflushed counts.
// A crash loses at most one second of this process's counts.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';

const CHUNK_ROWS = 500;

/** Counts of one key in one bucket: a UTC day here, a usage period for the period meter (period-usage.ts). */
export interface UsageRow {
  api_key_id: number;
  day: string;
  count: number;
}

/** Adds rows to their table (count = count + n); the daily table unless the meter is given another writer. */
export type UsageWriter = (db: Kysely<Database>, rows: UsageRow[]) => Promise<void>;

async function upsertDays(db: Kysely<Database>, rows: UsageRow[]): Promise<void> {
  await db
    .insertInto('api_key_usage')
    .values(rows)
    .onConflict((oc) => oc.columns(['api_key_id', 'day']).doUpdateSet({ count: sql<number>`api_key_usage.count + excluded.count` }))
    .execute();
}

export interface UsageClock {
  /** 'YYYY-MM-DD' of now (UTC). */
  day: string;
  /** 'YYYY-MM'. */
  month: string;
  /** First and last calendar day of the month. */
  monthStart: string;
  monthEnd: string;
}

function isForeignKeyViolation(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

export function monthBounds(month: string): { start: string; end: string } {
  const [year, mon] = month.split('-').map(Number) as [number, number];
  const last = new Date(Date.UTC(year, mon, 0)).getUTCDate();
  return { start: `${month}-01`, end: `${month}-${String(last).padStart(2, '0')}` };
}

export class Metering {
  /** day → key id → count, not yet handed to a flush. */
  private pending = new Map<string, Map<number, number>>();
  /** Counts taken by the flush in progress, still counted as unflushed until it commits. */
  private inFlight = new Map<string, Map<number, number>>();
  private currentDay = '';
  private currentMap: Map<number, number> | null = null;
  private dayEndsAt = 0;
  private clockValue: UsageClock = { day: '', month: '', monthStart: '', monthEnd: '' };
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  /** When the last flush ended with every count written (epoch ms). */
  private lastFlushedAt = Date.now();
  /** `afterWrite` calls under way: a flush resolves once those of flushes before it are done too (prepaid draws). */
  private readonly telling = new Set<Promise<void>>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly onError: (error: unknown) => void = () => undefined,
    private readonly writer: UsageWriter = upsertDays,
    /**
     * Told of the rows a flush wrote, once they are in the database and no longer counted as unflushed (so a reader
     * meanwhile never counts them twice); its failures go to `onError` and never undo the counts.
     */
    private readonly afterWrite?: (rows: UsageRow[]) => Promise<void>,
  ) {}

  start(intervalMs = 1000): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** The UTC calendar facts of `now`, recomputed only when the day changes. */
  clock(now: number): UsageClock {
    if (now >= this.dayEndsAt || now < this.dayEndsAt - 86_400_000) {
      const date = new Date(now);
      const day = date.toISOString().slice(0, 10);
      const month = day.slice(0, 7);
      const { start, end } = monthBounds(month);
      this.clockValue = { day, month, monthStart: start, monthEnd: end };
      this.dayEndsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
    }
    return this.clockValue;
  }

  /** Counts one use of key `id` on `day`. */
  count(id: number, day: string): void {
    let map = this.currentMap;
    if (map === null || this.currentDay !== day) {
      map = this.pending.get(day) ?? new Map<number, number>();
      this.pending.set(day, map);
      this.currentMap = map;
      this.currentDay = day;
    }
    map.set(id, (map.get(id) ?? 0) + 1);
  }

  /** This process's counts of key `id` not yet in the database, for days from `from` to `to` (inclusive). */
  unflushed(id: number, from: string, to: string): Map<string, number> {
    const out = new Map<string, number>();
    for (const source of [this.pending, this.inFlight]) {
      for (const [day, counts] of source) {
        if (day < from || day > to) continue;
        const count = counts.get(id);
        if (count !== undefined) out.set(day, (out.get(day) ?? 0) + count);
      }
    }
    return out;
  }

  unflushedTotal(id: number, from: string, to: string): number {
    let total = 0;
    for (const count of this.unflushed(id, from, to).values()) total += count;
    return total;
  }

  /** Forgets the counts of a deleted key. */
  forget(id: number): void {
    for (const counts of this.pending.values()) counts.delete(id);
  }

  /** How long ago every count was last in the database (0 right after a complete flush; grows while flushes fail). */
  lagMs(now: number): number {
    return Math.max(0, now - this.lastFlushedAt);
  }

  /**
   * Writes every pending count to the database, and resolves once every count written so far has been told to
   * `afterWrite` — also the counts of a flush already under way (a background one), so a caller that flushes sees them
   * all acted on. Concurrent calls share one write.
   */
  async flush(): Promise<void> {
    await this.flushOnce();
    // Those under way now, not later ones: under steady load a flush must still end.
    await Promise.all(new Set(this.telling));
  }

  private flushOnce(): Promise<void> {
    if (this.flushing !== null) return this.flushing.then(() => (this.pending.size > 0 ? this.flush() : undefined));
    if (this.pending.size === 0) {
      this.lastFlushedAt = Date.now();
      return Promise.resolve();
    }
    this.inFlight = this.pending;
    this.pending = new Map();
    this.currentMap = null;
    const batch = this.inFlight;
    const rows: UsageRow[] = [];
    for (const [day, counts] of batch) for (const [id, count] of counts) rows.push({ api_key_id: id, day, count });
    let unwritten: ReadonlySet<UsageRow> = new Set();
    this.flushing = this.write(rows)
      .then(() => {
        this.lastFlushedAt = Date.now();
      })
      .catch((error: unknown) => {
        // Keep the counts that were not written for the next attempt rather than lose them.
        const { rest } = error as { rest?: UsageRow[] };
        unwritten = new Set(rest ?? rows);
        for (const row of rest ?? []) {
          const target = this.pending.get(row.day) ?? new Map<number, number>();
          target.set(row.api_key_id, (target.get(row.api_key_id) ?? 0) + row.count);
          this.pending.set(row.day, target);
        }
        this.currentMap = null;
        this.onError(error);
      })
      .finally(() => {
        this.inFlight = new Map();
        this.flushing = null;
      });
    const { afterWrite } = this;
    if (afterWrite === undefined) return this.flushing;
    const telling = this.flushing.then(async () => {
      const written = rows.filter((row) => !unwritten.has(row));
      if (written.length > 0) await afterWrite(written).catch(this.onError);
    });
    this.telling.add(telling);
    return telling.finally(() => this.telling.delete(telling));
  }

  /** Upserts the rows chunk by chunk; on failure the error carries `rest`, the rows not written. */
  private async write(rows: UsageRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += CHUNK_ROWS) {
      const chunk = rows.slice(i, i + CHUNK_ROWS);
      try {
        try {
          await this.upsert(chunk);
        } catch (error) {
          if (!isForeignKeyViolation(error)) throw error;
          // A key was deleted since it was counted: write the chunk row by row and drop the orphans.
          for (let j = 0; j < chunk.length; j++) {
            try {
              await this.upsert([chunk[j]!]);
            } catch (rowError) {
              if (isForeignKeyViolation(rowError)) continue;
              throw Object.assign(rowError as object, { rest: [...chunk.slice(j), ...rows.slice(i + CHUNK_ROWS)] });
            }
          }
        }
      } catch (error) {
        if (typeof error === 'object' && error !== null && 'rest' in error) throw error;
        throw Object.assign(typeof error === 'object' && error !== null ? error : new Error(String(error)), { rest: rows.slice(i) });
      }
    }
  }

  private upsert(rows: UsageRow[]): Promise<void> {
    return this.writer(this.db, rows);
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
    if (this.pending.size > 0) await this.flush();
  }
}
