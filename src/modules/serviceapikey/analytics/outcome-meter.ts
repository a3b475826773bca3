// Key analytics' counting and flush (issue 25), beside the usage meters and flushed as they are: a timer every second,
// at `flushUsage` and on shutdown. The check counts into `tally` (tally.ts); the flush hands what it took to the
// writer (outcome-writer.ts). A failed write keeps its rows for the next flush and reports the error to `onError`.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { PendingRows, writePending } from './outcome-writer.ts';
import { OutcomeTally } from './tally.ts';

export class OutcomeMeter {
  readonly tally = new OutcomeTally();
  private readonly pending = new PendingRows();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(intervalMs = 1000): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Writes everything counted before the call; concurrent calls share one write. Never rejects. */
  flush(): Promise<void> {
    if (this.flushing !== null) return this.flushing.then(() => (this.tally.pending ? this.flush() : undefined));
    this.pending.add(this.tally.take());
    if (this.pending.size === 0) return Promise.resolve();
    this.flushing = writePending(this.db, this.pending)
      .catch((error: unknown) => this.onError(error))
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }

  /** Rows waiting for a write that failed (for /metrics-style checks and tests). */
  get unwritten(): number {
    return this.pending.size;
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}
