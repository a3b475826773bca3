// The queue of tracked events and their delivery to `admin/usage/ingest`.
//
// - Events wait in batches of at most MAX_BATCH_EVENTS (the server's limit a call) and MAX_BATCH_BYTES; batches are
//   sent oldest first, one at a time, on each flush.
// - A batch that failed where a retry can help (network, timeout, 408, 429, 5xx, a refused token that may be
//   re-enabled) stays at the front and is sent again on the next flush with the same events, ids and timestamps: the
//   server stores an id once per order, so an answer lost after the server stored the batch costs nothing.
// - A batch the server refused as a whole (another 4xx) is dropped and reported: sending it again cannot help. A 413
//   (an operator's lower body limit) splits the batch in two instead, down to single events.
// - Per-event rejections in an answer are reported to onError once per code, and never sent again.
// - At most maxQueued events wait; past that the oldest waiting event is dropped (a dead server must not eat the
//   app's memory), and the count of drops is reported at the end of the next flush.
import { callAdmin, type AdminCaller } from './http.ts';
import { TollgateEventRejection, TollgateEventsDropped, TollgateHttpError } from './errors.ts';
import type { QueuedEvent } from './event-shape.ts';

export const MAX_BATCH_EVENTS = 1000;
/** Half of Tollgate's default 1 MB body limit: room for the envelope and for an operator's smaller limit. */
export const MAX_BATCH_BYTES = 512 * 1024;
export const DEFAULT_MAX_QUEUED_EVENTS = 100_000;

interface Batch {
  events: QueuedEvent[];
  bytes: number;
  /** Being sent: neither appended to nor dropped from until its answer. */
  sending: boolean;
}

interface IngestAnswer {
  rejected?: Array<{ index?: unknown; code?: unknown; message?: unknown }>;
}

export interface EventQueueOptions {
  caller: AdminCaller;
  maxQueued: number;
  onError: (error: unknown, what: string) => void;
}

export class EventQueue {
  private readonly batches: Batch[] = [];
  private queued = 0;
  private droppedUnreported = 0;
  private flushing: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: EventQueueOptions) {}

  /** Events waiting or being sent. */
  get size(): number {
    return this.queued;
  }

  add(event: QueuedEvent): void {
    if (this.closed) {
      this.options.onError(new TollgateEventsDropped(1, 'tracked after close()'), 'usage events dropped');
      return;
    }
    let last = this.batches.at(-1);
    if (last === undefined || last.sending || last.events.length >= MAX_BATCH_EVENTS || last.bytes + event.bytes > MAX_BATCH_BYTES) {
      last = { events: [], bytes: 0, sending: false };
      this.batches.push(last);
    }
    last.events.push(event);
    last.bytes += event.bytes;
    this.queued++;
    if (this.queued > this.options.maxQueued) this.dropOldest();
  }

  /** Sends what waits, oldest first, until a batch fails; concurrent calls share one run. */
  flush(): Promise<void> {
    if (this.flushing !== null) return this.flushing;
    this.flushing = this.sendAll().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /** One last try (after any flush under way), then reports what is still unsent as dropped. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.flushing !== null) await this.flushing;
    await this.flush();
    this.reportDropped();
    if (this.queued > 0) {
      this.options.onError(new TollgateEventsDropped(this.queued, 'Tollgate could not be reached before close()'), 'usage events dropped');
      this.batches.length = 0;
      this.queued = 0;
    }
  }

  private dropOldest(): void {
    // The batch being sent (always the first) is left alone: its answer decides its fate.
    const index = this.batches.findIndex((batch) => !batch.sending);
    if (index === -1) return;
    const batch = this.batches[index]!;
    const dropped = batch.events.shift()!;
    batch.bytes -= dropped.bytes;
    if (batch.events.length === 0) this.batches.splice(index, 1);
    this.queued--;
    this.droppedUnreported++;
  }

  private reportDropped(): void {
    if (this.droppedUnreported === 0) return;
    const count = this.droppedUnreported;
    this.droppedUnreported = 0;
    this.options.onError(new TollgateEventsDropped(count, `more than ${this.options.maxQueued} events waited (the oldest were dropped)`), 'usage events dropped');
  }

  private async sendAll(): Promise<void> {
    try {
      await this.sendBatches();
    } finally {
      // Drops since the last report, including those made while this flush waited on Tollgate.
      this.reportDropped();
    }
  }

  private async sendBatches(): Promise<void> {
    while (this.batches.length > 0) {
      const batch = this.batches[0]!;
      batch.sending = true;
      let answer: unknown;
      try {
        answer = await callAdmin(this.options.caller, 'usage/ingest', `{"events":[${batch.events.map((event) => event.json).join(',')}]}`);
      } catch (error) {
        batch.sending = false;
        if (this.afterFailure(batch, error) === 'stop') return;
        continue;
      }
      this.remove(batch);
      this.reportRejections(batch, answer);
    }
  }

  /** Decides what a failed batch becomes: kept for the next flush ('stop'), or dropped / split ('go on'). */
  private afterFailure(batch: Batch, error: unknown): 'stop' | 'go on' {
    const status = error instanceof TollgateHttpError ? error.status : null;
    if (status === 401 || status === 403) {
      // The same report as verify's: a configuration error (unknown, deactivated token, or lacking the right).
      // Kept: the token may be re-enabled, and the queue's bound caps what waits meanwhile.
      this.options.onError(error, 'verifier token refused');
      return 'stop';
    }
    if (status === 413 && batch.events.length > 1) {
      const half = Math.ceil(batch.events.length / 2);
      const parts = [batch.events.slice(0, half), batch.events.slice(half)].map((events) => ({
        events,
        bytes: events.reduce((sum, event) => sum + event.bytes, 0),
        sending: false,
      }));
      this.batches.splice(0, 1, ...parts);
      return 'go on';
    }
    if (status !== null && status >= 400 && status < 500 && status !== 408 && status !== 429) {
      // Refused as a whole (a 413 for one event, a 400, 404 from a Tollgate without ingestion, 422): nothing was
      // stored, and the same request would be refused again.
      this.remove(batch);
      this.options.onError(error, 'usage events refused');
      return 'go on';
    }
    // Network, timeout, 408, 429, 5xx, or an answer that is not JSON: kept, with the same ids, for the next flush.
    this.options.onError(error, 'usage events');
    return 'stop';
  }

  private remove(batch: Batch): void {
    const index = this.batches.indexOf(batch);
    if (index !== -1) this.batches.splice(index, 1);
    this.queued -= batch.events.length;
  }

  private reportRejections(batch: Batch, answer: unknown): void {
    const rejected = (answer as IngestAnswer | null)?.rejected;
    if (!Array.isArray(rejected)) return;
    const byCode = new Map<string, { message: string; events: Array<{ id: string; meter: string }> }>();
    for (const rejection of rejected) {
      const event = typeof rejection.index === 'number' ? batch.events[rejection.index] : undefined;
      const code = typeof rejection.code === 'string' ? rejection.code : 'REJECTED';
      let group = byCode.get(code);
      if (group === undefined) byCode.set(code, (group = { message: typeof rejection.message === 'string' ? rejection.message : '', events: [] }));
      if (event !== undefined) group.events.push({ id: event.id, meter: event.meter });
    }
    for (const [code, { message, events }] of byCode) this.options.onError(new TollgateEventRejection(code, events, message), 'usage event rejected');
  }
}
