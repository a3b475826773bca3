// The verifiers' events stream (CONTRACT §11): one `key.changed` event per change of a key, numbered, with a bounded
// history so a client that reconnects with Last-Event-ID gets what it missed, or a `resync` event once that history
// is gone. Event ids are `<process id>-<sequence>`: an id from another process (or an earlier run of this one) cannot
// be replayed from here, so it gets `resync` too.
import { randomBytes } from 'node:crypto';

export interface KeyEvent {
  id: string;
  data: { type: 'key.changed'; order_id: number; key_id: number } | { type: 'resync' };
}

export type KeyEventSubscriber = (event: KeyEvent) => void;

const HISTORY = 10_000;

export class KeyEventHub {
  private readonly run = randomBytes(6).toString('hex');
  private seq = 0;
  /** The last HISTORY events, oldest first. */
  private readonly history: KeyEvent[] = [];
  private readonly subscribers = new Set<KeyEventSubscriber>();
  private readonly closers = new Set<() => void>();

  constructor(private readonly maxHistory = HISTORY) {}

  publish(ref: { keyId: number; orderId: number }): void {
    this.emit({ type: 'key.changed', order_id: ref.orderId, key_id: ref.keyId });
  }

  /** Every subscriber must drop everything it knows (e.g. this process may have missed changes). */
  resync(): void {
    this.emit({ type: 'resync' });
  }

  private emit(data: KeyEvent['data']): void {
    const event: KeyEvent = { id: `${this.run}-${++this.seq}`, data };
    this.history.push(event);
    if (this.history.length > this.maxHistory) this.history.shift();
    for (const subscriber of this.subscribers) subscriber(event);
  }

  /** The events after `lastEventId`, or null when they cannot be told (history gone, another process's id). */
  since(lastEventId: string): KeyEvent[] | null {
    const match = /^([0-9a-f]{12})-(\d{1,15})$/.exec(lastEventId);
    if (match === null || match[1] !== this.run) return null;
    const seen = Number(match[2]);
    if (seen > this.seq) return null;
    if (seen === this.seq) return [];
    const oldest = this.history[0];
    if (oldest === undefined) return null;
    const oldestSeq = this.seq - this.history.length + 1;
    if (seen + 1 < oldestSeq) return null;
    return this.history.slice(seen + 1 - oldestSeq);
  }

  /** Subscribes; `close` is called when the hub shuts down. Returns the unsubscribe function. */
  subscribe(subscriber: KeyEventSubscriber, close: () => void): () => void {
    this.subscribers.add(subscriber);
    this.closers.add(close);
    return () => {
      this.subscribers.delete(subscriber);
      this.closers.delete(close);
    };
  }

  /** The id of the newest event (or of "nothing yet"), for a resync sent to one client. */
  lastId(): string {
    return `${this.run}-${this.seq}`;
  }

  get size(): number {
    return this.subscribers.size;
  }

  close(): void {
    for (const close of this.closers) close();
    this.subscribers.clear();
    this.closers.clear();
  }
}
