// Tells every Tollgate process that a key changed, so each drops it from its cache within a second:
// Redis pub/sub when REDIS_URL is set, otherwise PostgreSQL LISTEN/NOTIFY on PostgreSQL, otherwise nothing (one
// process on SQLite; the workers of one primary relay through it: ClusterChannel). Messages carry key HMACs only, never keys. A listener that loses its connection marks the
// cache untrusted (records then live at most one second), reconnects with backoff, and clears the cache once back,
// since it may have missed messages meanwhile.
// Besides hashes, a message may carry key references `k<key id>:<order id>` (issue 11): the verifiers' events stream
// (events-stream.ts) hears of every change from any process through them. Receivers that do not know them skip them.
// And order references `m<order id>` (issue 23): events ingested somewhere changed the order's meter quantities, so
// the processes holding them re-read them (check/meter-state.ts) and a meter's hard limit holds everywhere.
import { sql, type Kysely } from 'kysely';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { loadPg } from '../../../db/pg.ts';
import type { Database } from '../../../db/schema.ts';
import { isClusterMessage, type InvalidateMessage } from '../../../platform/cluster-messages.ts';
import type { KeyCache } from '../check/cache.ts';

export const CHANNEL = 'tollgate_apikey_invalidate';
/** Hashes per message: 64 hex characters plus a comma each, well under PostgreSQL's 8000-byte payload limit. */
const PER_MESSAGE = 100;

export interface InvalidationChannel {
  readonly kind: 'local' | 'postgres' | 'redis' | 'cluster';
  /** Starts listening for other processes' changes; idempotent. */
  listen(): void;
  /** Tells the other processes (fire and forget); `hashes` may include key references (refToken). */
  publish(hashes: readonly string[]): void;
  /** Called for every key reference received, this process's own included (the events stream listens here). */
  onKeyChanged: KeyChangeListener | null;
  /** Called when listening (re)starts: messages sent meanwhile are lost (the events stream then says "resync"). */
  onReset: (() => void) | null;
  /** Called for every order reference received from another process (its meter quantities changed). */
  onMetersChanged: MetersChangeListener | null;
  /** Called for every client reference received from another process (it drew from the client's prepaid balance). */
  onCreditChanged: CreditChangeListener | null;
  close(): Promise<void>;
}

type ErrorLog = (error: unknown, what: string) => void;
export type KeyChangeListener = (ref: { keyId: number; orderId: number }) => void;
export type MetersChangeListener = (orderId: number) => void;
export type CreditChangeListener = (clientId: number) => void;

/** What a channel tells of the messages it receives. */
interface Listeners {
  onKeyChanged: KeyChangeListener | null;
  onMetersChanged: MetersChangeListener | null;
  onCreditChanged: CreditChangeListener | null;
}

/** The message token naming a changed key, for the events stream. */
export function refToken(keyId: number, orderId: number): string {
  return `k${keyId}:${orderId}`;
}

/** The message token naming a client whose prepaid balance was drawn from (issue 24, check/credit-sync.ts). */
export function creditToken(clientId: number): string {
  return `c${clientId}`;
}

/** The message token naming an order whose meter quantities changed. */
export function metersToken(orderId: number): string {
  return `m${orderId}`;
}

function messagesOf(hashes: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < hashes.length; i += PER_MESSAGE) out.push(hashes.slice(i, i + PER_MESSAGE).join(','));
  return out;
}

function receive(cache: KeyCache, payload: string, { onKeyChanged, onMetersChanged, onCreditChanged }: Listeners): void {
  for (const token of payload.split(',')) {
    if (/^[0-9a-f]{64}$/.test(token)) cache.invalidate(token);
    else if (token.startsWith('m')) {
      const order = /^m(\d{1,10})$/.exec(token);
      if (order !== null && onMetersChanged !== null) onMetersChanged(Number(order[1]));
    } else if (token.startsWith('c')) {
      const client = /^c(\d{1,10})$/.exec(token);
      if (client !== null && onCreditChanged !== null) onCreditChanged(Number(client[1]));
    } else if (onKeyChanged !== null) {
      const ref = /^k(\d{1,10}):(\d{1,10})$/.exec(token);
      if (ref !== null) onKeyChanged({ keyId: Number(ref[1]), orderId: Number(ref[2]) });
    }
  }
}

/** This process's own key references only (the hashes were dropped from its cache already, its meters re-read). */
function ownRefs(hashes: readonly string[]): string {
  return hashes.filter((token) => token.startsWith('k')).join(',');
}

export class LocalChannel implements InvalidationChannel {
  readonly kind = 'local';
  onKeyChanged: KeyChangeListener | null = null;
  onReset: (() => void) | null = null;
  onMetersChanged: MetersChangeListener | null = null;
  onCreditChanged: CreditChangeListener | null = null;
  constructor(private readonly cache: KeyCache) {
    cache.trusted = true;
  }
  listen(): void {}
  /** One process: only the key references matter (the hashes were dropped from the cache already). */
  publish(hashes: readonly string[]): void {
    if (this.onKeyChanged !== null) receive(this.cache, ownRefs(hashes), this);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

export class PostgresChannel implements InvalidationChannel {
  readonly kind = 'postgres';
  onKeyChanged: KeyChangeListener | null = null;
  onReset: (() => void) | null = null;
  onMetersChanged: MetersChangeListener | null = null;
  onCreditChanged: CreditChangeListener | null = null;
  private client: pg.Client | null = null;
  private started = false;
  private closed = false;
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly sending = new Set<Promise<void>>();

  constructor(
    private readonly url: string,
    private readonly db: Kysely<Database>,
    private readonly cache: KeyCache,
    private readonly log: ErrorLog,
  ) {
    cache.trusted = false;
  }

  listen(): void {
    if (this.started) return;
    this.started = true;
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new (loadPg().Client)({ connectionString: this.url });
    this.client = client;
    let lost = false;
    const onLost = (error?: unknown): void => {
      if (lost) return;
      lost = true;
      this.cache.trusted = false;
      if (error !== undefined && !this.closed) this.log(error, 'PostgreSQL invalidation listener');
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload !== undefined) receive(this.cache, message.payload, this);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      if (this.closed) {
        await client.end();
        return;
      }
      // Messages sent while nobody listened are gone: start from an empty cache.
      this.cache.clear();
      this.cache.trusted = true;
      this.retryMs = 100;
      this.onReset?.();
    } catch (error) {
      onLost(error);
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer !== null) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, 5000);
  }

  publish(hashes: readonly string[]): void {
    for (const payload of messagesOf(hashes)) {
      const sent = sql`select pg_notify(${CHANNEL}, ${payload})`
        .execute(this.db)
        .then(() => undefined)
        .catch((error: unknown) => this.log(error, 'pg_notify'))
        .finally(() => this.sending.delete(sent));
      this.sending.add(sent);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    // Messages already handed over go out while the pool is still open.
    await Promise.all(this.sending);
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    if (client !== null) {
      client.removeAllListeners('end');
      client.removeAllListeners('error');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
    }
  }
}

export class RedisChannel implements InvalidationChannel {
  readonly kind = 'redis';
  onKeyChanged: KeyChangeListener | null = null;
  onReset: (() => void) | null = null;
  onMetersChanged: MetersChangeListener | null = null;
  onCreditChanged: CreditChangeListener | null = null;
  private subscriber: Redis | null = null;
  private publisher: Redis | null = null;
  private readonly channel: string;

  constructor(
    private readonly url: string,
    prefix: string,
    private readonly cache: KeyCache,
    private readonly log: ErrorLog,
  ) {
    this.channel = `${prefix}apikey:invalidate`;
    cache.trusted = false;
  }

  listen(): void {
    if (this.subscriber !== null) return;
    const subscriber = new Redis(this.url, { maxRetriesPerRequest: null, retryStrategy: (times) => Math.min(times * 100, 5000) });
    this.subscriber = subscriber;
    const subscribe = (): void => {
      subscriber
        .subscribe(this.channel)
        .then(() => {
          this.cache.clear();
          this.cache.trusted = true;
          this.onReset?.();
        })
        .catch((error: unknown) => this.log(error, 'Redis subscribe'));
    };
    subscriber.on('message', (channel: string, payload: string) => {
      if (channel === this.channel) receive(this.cache, payload, this);
    });
    subscriber.on('close', () => {
      this.cache.trusted = false;
    });
    subscriber.on('error', (error: unknown) => this.log(error, 'Redis invalidation listener'));
    // ioredis re-subscribes by itself after a reconnect; subscribing again on 'ready' also tells us when it is done.
    subscriber.on('ready', subscribe);
  }

  publish(hashes: readonly string[]): void {
    if (this.publisher === null) {
      this.publisher = new Redis(this.url, { maxRetriesPerRequest: 2, enableAutoPipelining: true });
      this.publisher.on('error', (error: unknown) => this.log(error, 'Redis publisher'));
    }
    for (const payload of messagesOf(hashes)) {
      this.publisher.publish(this.channel, payload).catch((error: unknown) => this.log(error, 'Redis publish'));
    }
  }

  async close(): Promise<void> {
    const clients = [this.subscriber, this.publisher];
    this.subscriber = null;
    this.publisher = null;
    for (const client of clients) {
      if (client === null) continue;
      client.removeAllListeners('close');
      await client.quit().catch(() => client.disconnect());
    }
  }
}

/**
 * The workers of one cluster primary on SQLite without Redis (no LISTEN/NOTIFY there): a change is sent to the
 * primary over IPC, which relays it at once to every other worker (src/primary.ts). IPC between a primary
 * and its workers does not drop messages while both live; a worker that starts (or restarts) begins with an empty
 * cache, so it cannot hold a record changed before it was there.
 */
export class ClusterChannel implements InvalidationChannel {
  readonly kind = 'cluster';
  onKeyChanged: KeyChangeListener | null = null;
  onReset: (() => void) | null = null;
  onMetersChanged: MetersChangeListener | null = null;
  onCreditChanged: CreditChangeListener | null = null;
  private readonly onMessage = (message: unknown): void => {
    if (isClusterMessage(message) && message.t === 'tollgate:invalidate') receive(this.cache, message.payload, this);
  };
  private started = false;

  constructor(private readonly cache: KeyCache) {
    cache.trusted = true;
  }

  listen(): void {
    if (this.started) return;
    this.started = true;
    process.on('message', this.onMessage);
  }

  publish(hashes: readonly string[]): void {
    // The primary relays to the other workers only: this worker's own events stream hears its changes here.
    if (this.onKeyChanged !== null) receive(this.cache, ownRefs(hashes), this);
    if (process.send === undefined || !process.connected) return;
    for (const payload of messagesOf(hashes)) {
      const message: InvalidateMessage = { t: 'tollgate:invalidate', payload };
      process.send(message);
    }
  }

  close(): Promise<void> {
    process.off('message', this.onMessage);
    return Promise.resolve();
  }
}
