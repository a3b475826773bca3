// @tollgate/sdk: verifies Tollgate API keys inside the operator's app (CONTRACT §11).
//
// - Answers from an in-process cache (valid keys for cacheTtlMs, refused keys for negativeTtlMs); concurrent
//   verifies of one uncached key share one request.
// - Listens to the events stream: a key.changed event drops the key at once, so a revoked key is refused as soon as
//   the event arrives. While the stream is down, cached answers older than one second are not served (the server is
//   asked again), and after reconnecting the server replays what was missed (or says "resync": the cache is cleared).
// - Uses answered from the cache are counted here and reported with report_usage every second and on close(), in
//   batches with an id; a batch that failed is retried with the same id, so the server never counts it twice.
// - track() queues metered events for admin/usage/ingest (event-queue.ts): batched, retried with the same ids, bounded.
// - usage.remaining is counted down locally; at zero the server is asked again, so a hard limit holds.
// - Timeouts, network errors and 5xx answers follow failOpen (valid: failOpen, reason: "UNAVAILABLE").
// - A verifier token Tollgate refuses (401/403) is a configuration error, not an outage: reason "UNAUTHORIZED", never
//   valid whatever failOpen says, and the default onError says so once on stderr.
import { randomUUID } from 'node:crypto';
import { EventStream } from './events.ts';
import { TollgateHttpError } from './errors.ts';
import { DEFAULT_MAX_QUEUED_EVENTS, EventQueue } from './event-queue.ts';
import { shapeEvent } from './event-shape.ts';
import { callAdmin, type AdminCaller } from './http.ts';
import { logOnce } from './log.ts';
import { readingList, type MeterReadings } from './readings.ts';
import { createPortalSession, type PortalScope, type PortalSession, type PortalSessionOptions } from './portal.ts';

export { TollgateEventRejection, TollgateEventsDropped, TollgateHttpError } from './errors.ts';
export type { MeterReading, MeterReadings } from './readings.ts';
export type { PortalScope, PortalSession, PortalSessionOptions } from './portal.ts';

export type Reason =
  | 'VALID'
  | 'NOT_FOUND'
  | 'DISABLED'
  | 'CLIENT_INACTIVE'
  | 'NOT_ACTIVE'
  | 'EXPIRED'
  | 'LIMIT_EXCEEDED'
  | 'RATE_LIMITED'
  /** The order's free trial ended and its first invoice is not paid yet. */
  | 'TRIAL_ENDED'
  /** A prepaid plan's balance is at its floor (issue 24): refused until it is topped up. */
  | 'NO_CREDIT'
  /** Tollgate could not be asked (down, slower than timeoutMs, 5xx); `valid` is then the `failOpen` option. */
  | 'UNAVAILABLE'
  /** Tollgate refused the verifier token (unknown, deactivated, or without `serviceapikey.check`); never valid. */
  | 'UNAUTHORIZED';

/** One meter of the plan in `usage.meters` (issue 23): its quantity this period and what it costs. */
export interface MeterUsage {
  code: string;
  name: string;
  unit: string;
  aggregation: 'count' | 'sum' | 'max' | 'unique_count' | 'latest';
  used: number;
  included: number | null;
  overage_units: number;
  /** Projected price of the units beyond `included`; null when the meter bills no overage. */
  overage_amount: string | null;
  hard_limit: number | null;
}

export interface Usage {
  period_start: string;
  period_end: string;
  used: number;
  limit: number | null;
  remaining: number | null;
  /** The meter whose limit refuses the key (`calls` for the built-in one), or null; absent from older servers. */
  limited_by?: string | null;
  /** The plan's meters beside the built-in calls; absent from older servers. */
  meters?: MeterUsage[];
}

export interface VerifyResult {
  valid: boolean;
  reason: Reason;
  orderId: number | null;
  keyId: number | null;
  /** The key's custom parameters when valid, else null. */
  config: Record<string, unknown> | null;
  usage: Usage | null;
  /** Seconds to wait, for RATE_LIMITED (and LIMIT_EXCEEDED: until the usage period ends). */
  retryAfter: number | null;
}

export interface TollgateOptions {
  /** Where Tollgate answers, e.g. https://billing.example.com */
  baseUrl: string;
  /** The API token of a staff member whose group holds `serviceapikey.check` (a verifier). */
  token: string;
  cacheTtlMs?: number;
  negativeTtlMs?: number;
  timeoutMs?: number;
  failOpen?: boolean;
  /** How often cached uses and tracked events are sent (default 1000 ms). */
  reportIntervalMs?: number;
  /**
   * Tracked events waiting to be sent at most (default 100,000): past it the oldest is dropped and onError told, so
   * an unreachable Tollgate cannot eat the app's memory.
   */
  maxQueuedEvents?: number;
  /** The stream counts as dropped after this long without a byte (the server sends a comment every 15 s). */
  streamIdleTimeoutMs?: number;
  /**
   * Failures (verify, usage reports, tracked events, the events stream, a refused token); never receives a key or the
   * token. The default writes the first failure of each kind to stderr (console.error), then stays quiet.
   */
  onError?: (error: unknown, what: string) => void;
}

interface Entry {
  result: VerifyResult;
  expiresAt: number;
  fetchedAt: number;
  /** The server answered VALID past the limit: its limit is not enforced, so no local countdown. */
  pastLimitOk: boolean;
}

interface ServerInfo {
  valid: 0 | 1;
  reason: Exclude<Reason, 'UNAVAILABLE' | 'UNAUTHORIZED'>;
  config: Record<string, unknown> | null;
  usage: Usage | null;
  order_id: number | null;
  key_id: number | null;
  retry_after?: number;
}

/** While the events stream is down, cached answers older than this are not served. */
const UNTRUSTED_MAX_AGE_MS = 1000;
const MAX_KEY_LENGTH = 256;
const MAX_COUNT_PER_ITEM = 1_000_000_000;
const MAX_ITEMS_PER_BATCH = 10_000;


export class Tollgate {
  private readonly baseUrl: string;
  private readonly authorization: string;
  private readonly cacheTtlMs: number;
  private readonly negativeTtlMs: number;
  private readonly timeoutMs: number;
  private readonly failOpen: boolean;
  private readonly onError: (error: unknown, what: string) => void;
  private readonly cache = new Map<string, Entry>();
  /** key id → cached keys (a key.changed event names ids, never keys). */
  private readonly byKeyId = new Map<number, Set<string>>();
  private readonly inflight = new Map<string, Promise<VerifyResult>>();
  /** Bumped by every event: an answer fetched across an event is not cached (it may predate the change). */
  private epoch = 0;
  /** Uses answered from the cache, not yet in a batch: key id → count. */
  private pending = new Map<number, number>();
  /** Batches sent but not acknowledged, oldest first; retried with the same id. */
  private readonly unsent: Array<{ batch_id: string; usage: Array<{ key_id: number; count: number }> }> = [];
  private reporting: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly stream: EventStream;
  private readonly caller: AdminCaller;
  private readonly events: EventQueue;
  private closed = false;

  constructor(options: TollgateOptions) {
    if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) throw new TypeError('baseUrl must be an http(s) URL');
    if (typeof options.token !== 'string' || options.token === '') throw new TypeError('token is required');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.authorization = `Basic ${Buffer.from(`admin:${options.token}`).toString('base64')}`;
    this.cacheTtlMs = options.cacheTtlMs ?? 10_000;
    this.negativeTtlMs = options.negativeTtlMs ?? 3000;
    this.timeoutMs = options.timeoutMs ?? 2000;
    this.failOpen = options.failOpen ?? false;
    this.onError = options.onError ?? logOnce();
    this.caller = { baseUrl: this.baseUrl, authorization: this.authorization, timeoutMs: this.timeoutMs };
    const maxQueued = options.maxQueuedEvents ?? DEFAULT_MAX_QUEUED_EVENTS;
    if (!Number.isSafeInteger(maxQueued) || maxQueued < 1) throw new TypeError('maxQueuedEvents must be a whole number ≥ 1');
    this.events = new EventQueue({ caller: this.caller, maxQueued, onError: (error, what) => this.onError(error, what) });
    this.timer = setInterval(() => void this.flush(), options.reportIntervalMs ?? 1000);
    this.timer.unref();
    this.stream = new EventStream({
      url: `${this.baseUrl}/api/admin/serviceapikey/events`,
      authorization: this.authorization,
      idleTimeoutMs: options.streamIdleTimeoutMs ?? 45_000,
      onEvent: (data) => this.onEvent(data),
      onError: (error) => this.onError(error, 'events stream'),
    });
    this.stream.start();
  }

  /** Whether the events stream is connected (cached answers are then trusted for their whole TTL). */
  get connected(): boolean {
    return this.stream.connected;
  }

  /** Verifies a key; `ip` is the end user's address (failed lookups count against it, not against this server). */
  verify(key: string, options: { ip?: string } = {}): Promise<VerifyResult> {
    if (typeof key !== 'string' || key === '' || key.length > MAX_KEY_LENGTH) return Promise.resolve(notFound());
    const now = Date.now();
    const entry = this.cache.get(key);
    if (entry !== undefined && this.usable(entry, now)) {
      const { result } = entry;
      if (!result.valid) return Promise.resolve(result);
      const usage = result.usage;
      if (usage === null || usage.remaining === null || entry.pastLimitOk) {
        this.count(result.keyId!, usage);
        return Promise.resolve(result);
      }
      if (usage.remaining > 0) {
        usage.remaining--;
        this.count(result.keyId!, usage);
        return Promise.resolve(result);
      }
      // The local countdown reached zero: report what was counted, then let the server judge.
      this.forget(key);
      return this.fetchCoalesced(key, options.ip, true);
    }
    if (entry !== undefined) this.forget(key);
    return this.fetchCoalesced(key, options.ip, false);
  }

  /**
   * Queues one metered event for `meter` of the key's plan (`value`: a whole number ≥ 0 for sum, max and latest
   * meters, none for count meters), with a new id and the current time; sent with the next flush. Throws a TypeError
   * for arguments Tollgate would refuse; what Tollgate refuses later goes to onError.
   */
  track(key: string, meter: string, value?: number, properties?: Record<string, unknown>): void {
    this.events.add(shapeEvent(key, meter, value, properties));
  }

  /**
   * Tracks what a middleware's `meters` function gives for a request. It runs once the response is out, where nobody
   * could catch an exception: a function that throws or a bad reading goes to onError ('meters') instead.
   */
  trackReadings(key: string, readings: () => MeterReadings): void {
    let list: readonly unknown[];
    try {
      list = readingList(readings());
    } catch (error) {
      this.onError(error, 'meters');
      return;
    }
    for (const reading of list) {
      try {
        if (typeof reading !== 'object' || reading === null) throw new TypeError('meters: each reading must be an object {meter, value?, properties?}');
        const { meter, value, properties } = reading as Record<string, unknown>;
        this.events.add(shapeEvent(key, meter, value, properties));
      } catch (error) {
        this.onError(error, 'meters');
      }
    }
  }

  /** Tracked events not yet acknowledged by Tollgate. */
  get queuedEvents(): number {
    return this.events.size;
  }

  /** Reports the counted uses and sends the tracked events now (also done every reportIntervalMs). */
  async flush(): Promise<void> {
    await Promise.all([this.flushUses(), this.events.flush()]);
  }

  private flushUses(): Promise<void> {
    if (this.reporting !== null) return this.reporting;
    this.reporting = this.report().finally(() => {
      this.reporting = null;
    });
    return this.reporting;
  }

  /**
   * Reports the remaining uses (retrying a few times), gives the tracked events one last try (what it cannot send goes
   * to onError as dropped) and closes the events stream.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.stream.stop();
    const uses = async () => {
      for (let attempt = 0; attempt < 3 && (this.pending.size > 0 || this.unsent.length > 0); attempt++) {
        await this.flushUses();
      }
    };
    await Promise.all([uses(), this.events.close()]);
    this.cache.clear();
    this.byKeyId.clear();
  }

  // ---- cache ------------------------------------------------------------------------------------------------

  private usable(entry: Entry, now: number): boolean {
    if (entry.expiresAt <= now) return false;
    return this.stream.connected || now - entry.fetchedAt <= UNTRUSTED_MAX_AGE_MS;
  }

  private count(keyId: number, usage: Usage | null): void {
    this.pending.set(keyId, (this.pending.get(keyId) ?? 0) + 1);
    if (usage !== null) usage.used++;
  }

  private store(key: string, result: VerifyResult, fetchedAt: number): void {
    const ttl = result.valid ? this.cacheTtlMs : this.negativeTtlMs;
    if (ttl <= 0) return;
    const usage = result.usage;
    // Valid with more uses than the limit: the plan does not enforce its limit, so nothing to count down.
    const pastLimitOk = result.valid && usage !== null && usage.limit !== null && usage.used > usage.limit;
    this.cache.set(key, { result, fetchedAt, expiresAt: fetchedAt + ttl, pastLimitOk });
    if (result.keyId !== null) {
      let keys = this.byKeyId.get(result.keyId);
      if (keys === undefined) this.byKeyId.set(result.keyId, (keys = new Set()));
      keys.add(key);
    }
  }

  private forget(key: string): void {
    const entry = this.cache.get(key);
    if (entry === undefined) return;
    this.cache.delete(key);
    const id = entry.result.keyId;
    if (id !== null) {
      const keys = this.byKeyId.get(id);
      keys?.delete(key);
      if (keys?.size === 0) this.byKeyId.delete(id);
    }
  }

  private onEvent(data: unknown): void {
    this.epoch++;
    if (typeof data !== 'object' || data === null) return;
    const event = data as { type?: unknown; key_id?: unknown };
    if (event.type === 'resync' || event.type === 'connected') {
      this.cache.clear();
      this.byKeyId.clear();
      return;
    }
    if (event.type === 'key.changed' && typeof event.key_id === 'number') {
      for (const key of this.byKeyId.get(event.key_id) ?? []) this.cache.delete(key);
      this.byKeyId.delete(event.key_id);
    }
  }

  // ---- asking the server ------------------------------------------------------------------------------------

  private fetchCoalesced(key: string, ip: string | undefined, flushFirst: boolean): Promise<VerifyResult> {
    const pending = this.inflight.get(key);
    // The server counted one use for the request; every caller that joined it is a use counted here.
    if (pending !== undefined) return pending.then((result) => this.joined(key, result, ip));
    const promise = (flushFirst ? this.flushUses() : Promise.resolve())
      .then(() => this.fetch(key, ip))
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, promise);
    return promise;
  }

  /** A caller that shared another's request: a valid answer is one more use (counted down like a cache hit). */
  private joined(key: string, result: VerifyResult, ip: string | undefined): VerifyResult | Promise<VerifyResult> {
    if (!result.valid || result.keyId === null) return result;
    const usage = result.usage;
    const entry = this.cache.get(key);
    const limited = usage !== null && usage.remaining !== null && !(entry?.result === result && entry.pastLimitOk);
    if (limited && usage.remaining! <= 0) return this.verify(key, ip === undefined ? {} : { ip });
    if (limited) usage.remaining!--;
    this.count(result.keyId, usage);
    return result;
  }

  private async fetch(key: string, ip: string | undefined): Promise<VerifyResult> {
    const epoch = this.epoch;
    const startedAt = Date.now();
    let info: ServerInfo;
    try {
      // Tollgate takes plain IPv4/IPv6 text; anything else (a zone id, a host name) is left out rather than refused.
      const address = ip !== undefined && /^[0-9A-Fa-f.:]{2,45}$/.test(ip) ? ip : undefined;
      info = (await this.call('get_info', { key, ...(address !== undefined && { ip: address }) })) as ServerInfo;
    } catch (error) {
      if (error instanceof TollgateHttpError && error.status === 429) {
        // This end user's address is over its failed-lookup budget (or this verifier over its own limit).
        return { ...notFound(), reason: 'RATE_LIMITED', retryAfter: error.retryAfter ?? 1 };
      }
      if (error instanceof TollgateHttpError && (error.status === 401 || error.status === 403)) {
        // Retrying cannot help and failing open would open the API to anyone until someone notices: refuse, say why.
        this.onError(error, 'verifier token refused');
        return { ...notFound(), reason: 'UNAUTHORIZED' };
      }
      if (error instanceof TollgateHttpError && (error.status === 400 || error.status === 422)) {
        // Tollgate refused the key itself as input (a NUL, a key far too long): no key is that, so it is not found.
        // Never UNAVAILABLE — with failOpen that would let in exactly the keys that cannot exist.
        return notFound();
      }
      this.onError(error, 'verify');
      return { valid: this.failOpen, reason: 'UNAVAILABLE', orderId: null, keyId: null, config: null, usage: null, retryAfter: null };
    }
    const result: VerifyResult = {
      valid: info.valid === 1,
      reason: info.reason,
      orderId: info.order_id ?? null,
      keyId: info.key_id ?? null,
      config: info.config ?? null,
      usage: info.usage ?? null,
      retryAfter: info.reason === 'RATE_LIMITED' ? (info.retry_after ?? 1) : info.reason === 'LIMIT_EXCEEDED' ? untilPeriodEnd(info.usage) : null,
    };
    if (this.epoch === epoch && !this.closed && result.reason !== 'RATE_LIMITED') this.store(key, result, startedAt);
    return result;
  }

  /**
   * A single-use link to `clientId`'s customer portal (all scopes when `scopes` is omitted): frame its `url` on an
   * origin listed in Tollgate's portal_frame_ancestors setting, or redirect to it. Needs a token with the `portal`
   * scope; a refusal (unknown client, bad scopes or return URL, missing scope) is a TollgateHttpError with its message.
   */
  portalSession(clientId: number, scopes?: readonly PortalScope[], options: PortalSessionOptions = {}): Promise<PortalSession> {
    return createPortalSession(this.caller, clientId, scopes, options);
  }

  private call(action: string, params: Record<string, unknown>): Promise<unknown> {
    return callAdmin(this.caller, `serviceapikey/${action}`, JSON.stringify(params));
  }

  // ---- usage reports ----------------------------------------------------------------------------------------

  private async report(): Promise<void> {
    if (this.pending.size > 0) {
      const usage = [...this.pending].map(([key_id, count]) => ({ key_id, count: Math.min(count, MAX_COUNT_PER_ITEM) }));
      this.pending = new Map();
      for (let i = 0; i < usage.length; i += MAX_ITEMS_PER_BATCH) {
        this.unsent.push({ batch_id: randomUUID(), usage: usage.slice(i, i + MAX_ITEMS_PER_BATCH) });
      }
    }
    while (this.unsent.length > 0) {
      const batch = this.unsent[0]!;
      try {
        await this.call('report_usage', batch);
        this.unsent.shift();
      } catch (error) {
        if (error instanceof TollgateHttpError && error.status === 422) {
          // A key deleted since it was cached: the server refused the whole batch (and recorded nothing), so the
          // same id can carry the batch without that key. Anything else refused is dropped, not retried forever.
          const item = /usage\.(\d+)\.key_id/.exec(error.detail);
          if (item !== null && batch.usage.length > 1) batch.usage.splice(Number(item[1]), 1);
          else this.unsent.shift();
          this.onError(error, 'usage report refused');
          continue;
        }
        this.onError(error, 'usage report');
        return; // kept, with its id, for the next attempt
      }
    }
  }
}

function notFound(): VerifyResult {
  return { valid: false, reason: 'NOT_FOUND', orderId: null, keyId: null, config: null, usage: null, retryAfter: null };
}

function untilPeriodEnd(usage: Usage | null): number | null {
  if (usage === null) return null;
  const end = Date.parse(`${usage.period_end}T23:59:59Z`);
  return Number.isNaN(end) ? null : Math.max(1, Math.ceil((end - Date.now()) / 1000));
}
