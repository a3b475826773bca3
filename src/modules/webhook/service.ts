// Webhooks (CONTRACT §11): the operator's endpoints and the deliveries made to them. The only writer of `webhooks`,
// `webhook_deliveries` and `webhook_attempts`.
//
// A delivery is written by the listener of the event that causes it, in that change's transaction: one delivery row
// and one outbox item (kind `webhook`) per subscribed endpoint, so a delivery exists exactly when the change does.
// The outbox sender then POSTs it (sender.ts) and keeps the schedule: 2xx delivers; anything else is retried after
// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, then the delivery is `failed`; a 410 switches the endpoint off.
// The body and the `webhook-id` are fixed when the delivery is written, so every attempt (and a manual retry) sends
// the same message; the timestamp header and signature are made per attempt with the endpoint's current secret.
//
// Secrets: `whsec_` + base64 of 24 random bytes, sealed with the instance secret; shown by create and rotate_secret
// only. Nothing here logs a secret or puts one in an error.
import { randomBytes } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { OutboxStatus } from '../outbox/types.ts';
import type { WebhookTable } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { nowIso } from '../../lib/time.ts';
import { OutboxGiveUp, type OutboxService } from '../outbox/service.ts';
import { AddressRefused, checkedAddresses, hostOf, parseReceiverUrl } from './address.ts';
import { dataOf, TEST_EVENT, WEBHOOK_EVENTS, type WebhookEventType } from './events.ts';
import { send } from './sender.ts';

export const WEBHOOK_KIND = 'webhook';
/** Waits before retries 1…7 (CONTRACT §11); an eighth failure is final. */
export const WEBHOOK_RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookRecord {
  id: number;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  /** Why it was switched off (e.g. the receiver answered 410), or null. */
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeliveryRecord {
  id: number;
  webhook_id: number;
  /** The `webhook-id` header, the same on every attempt. */
  message_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  /** When the next attempt is due (pending deliveries only). */
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AttemptRecord {
  id: number;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  created_at: string;
}

export interface WebhookServiceDeps {
  db: Kysely<Database>;
  outbox: Pick<OutboxService, 'enqueue' | 'registerKind'>;
  secrets: SecretBox;
  events: Pick<EventBus, 'on'>;
  /** WEBHOOK_ALLOW_PRIVATE: private and loopback receivers are allowed (tests, an operator's own network). */
  allowPrivate: boolean;
  /** The deadline of one delivery (WEBHOOK_TIMEOUT_MS, 10 s by default). */
  timeoutMs: number;
}

const MAX_EVENTS = 64;

function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

function newMessageId(): string {
  return `msg_${randomBytes(16).toString('base64url')}`;
}

function recordOf(row: Selectable<WebhookTable>): WebhookRecord {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: JSON.parse(row.events) as string[],
    enabled: row.enabled === 1,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const outboxStatusOf: Record<DeliveryStatus, OutboxStatus> = { pending: 'pending', delivered: 'sent', failed: 'failed' };

function deliveryStatusOf(outboxStatus: string): DeliveryStatus {
  return outboxStatus === 'sent' ? 'delivered' : outboxStatus === 'pending' ? 'pending' : 'failed';
}

export function createWebhookService(deps: WebhookServiceDeps) {
  const { db, outbox, secrets } = deps;

  /** A receiver URL staff may store: 422 naming the parameter otherwise. */
  async function checkUrl(text: string): Promise<string> {
    const url = parseReceiverUrl(text);
    if (typeof url === 'string') throw errors.invalid('url', url);
    if (!deps.allowPrivate) {
      try {
        await checkedAddresses(hostOf(url));
      } catch (error) {
        if (error instanceof AddressRefused) throw errors.invalid('url', `is refused: ${error.message} (WEBHOOK_ALLOW_PRIVATE is off)`);
        throw error;
      }
    }
    return url.toString();
  }

  function checkEvents(events: string[]): string[] {
    if (events.length === 0) throw errors.invalid('events', 'must name at least one event, or be ["*"]');
    if (events.length > MAX_EVENTS) throw errors.invalid('events', `must have at most ${MAX_EVENTS} entries`);
    if (events.includes('*')) {
      if (events.length !== 1) throw errors.invalid('events', 'must be ["*"] alone or a list of event types');
      return ['*'];
    }
    const known = new Set<string>(WEBHOOK_EVENTS);
    for (const event of events) if (!known.has(event)) throw errors.invalid('events', `has an unknown event type "${event.slice(0, 64)}"`);
    return [...new Set(events)];
  }

  async function requireWebhook(trx: Kysely<Database>, id: number): Promise<Selectable<WebhookTable>> {
    const row = await trx.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Webhook');
    return row;
  }

  /** Writes one delivery of `body` to an endpoint, in the caller's transaction. */
  async function writeDelivery(trx: Kysely<Database>, webhookId: number, type: string, data: Record<string, unknown>): Promise<number> {
    const messageId = newMessageId();
    const now = nowIso();
    const body = JSON.stringify({ type, timestamp: new Date().toISOString(), data });
    const outboxId = await outbox.enqueue(trx, { kind: WEBHOOK_KIND, payload: { message_id: messageId } });
    const row = await trx
      .insertInto('webhook_deliveries')
      .values({ webhook_id: webhookId, outbox_id: outboxId, message_id: messageId, event_type: type, body, last_status_code: null, created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /** The listener of one event: a delivery for each enabled endpoint subscribed to it. */
  async function fanOut(trx: Kysely<Database>, type: WebhookEventType, data: Record<string, unknown>): Promise<void> {
    const endpoints = await trx.selectFrom('webhooks').select(['id', 'events']).where('enabled', '=', 1).orderBy('id').execute();
    for (const endpoint of endpoints) {
      const events = JSON.parse(endpoint.events) as string[];
      if (events.includes('*') || events.includes(type)) await writeDelivery(trx, endpoint.id, type, data);
    }
  }

  for (const type of WEBHOOK_EVENTS) {
    deps.events.on(type, (payload, trx) => fanOut(trx, type, dataOf(payload)));
  }

  async function recordAttempt(deliveryId: number, result: { statusCode: number | null; durationMs: number; error: string | null }): Promise<void> {
    const now = nowIso();
    await inTransaction(db, async (trx) => {
      await trx
        .insertInto('webhook_attempts')
        .values({ delivery_id: deliveryId, status_code: result.statusCode, duration_ms: result.durationMs, error: result.error, created_at: now })
        .execute();
      await trx.updateTable('webhook_deliveries').set({ last_status_code: result.statusCode, updated_at: now }).where('id', '=', deliveryId).execute();
    });
  }

  /** The outbox handler: one attempt of one delivery. Throwing schedules the next attempt (or gives up). */
  async function deliver(payload: unknown): Promise<void> {
    const messageId = (payload as { message_id?: unknown } | null)?.message_id;
    if (typeof messageId !== 'string') throw new OutboxGiveUp('not a webhook delivery');
    const delivery = await db.selectFrom('webhook_deliveries').selectAll().where('message_id', '=', messageId).executeTakeFirst();
    if (delivery === undefined) throw new OutboxGiveUp('the delivery no longer exists');
    const endpoint = await db.selectFrom('webhooks').selectAll().where('id', '=', delivery.webhook_id).executeTakeFirst();
    if (endpoint === undefined) throw new OutboxGiveUp('the endpoint was deleted');
    if (endpoint.enabled !== 1) throw new OutboxGiveUp('the endpoint is disabled');
    const result = await send({
      url: endpoint.url,
      secret: secrets.decrypt(endpoint.secret_enc),
      messageId,
      body: delivery.body,
      timeoutMs: deps.timeoutMs,
      allowPrivate: deps.allowPrivate,
    });
    await recordAttempt(delivery.id, result);
    if (result.refused) throw new OutboxGiveUp(result.error ?? 'the address is refused');
    const code = result.statusCode;
    if (code === null) throw new Error(result.error ?? 'no response');
    if (code >= 200 && code < 300) return;
    if (code === 410) {
      // The receiver says the endpoint is gone for good: stop sending to it (staff can switch it on again).
      const now = nowIso();
      await db
        .updateTable('webhooks')
        .set({ enabled: 0, disabled_reason: `The receiver answered 410 Gone at ${now}`, updated_at: now })
        .where('id', '=', endpoint.id)
        .execute();
      throw new OutboxGiveUp('HTTP 410: the endpoint was disabled');
    }
    throw new Error(code >= 300 && code < 400 ? `HTTP ${code} (redirects are not followed)` : `HTTP ${code}`);
  }

  outbox.registerKind(WEBHOOK_KIND, { deliver, retryDelaysMs: WEBHOOK_RETRY_DELAYS_MS });

  function deliveryQuery(trx: Kysely<Database>) {
    return trx
      .selectFrom('webhook_deliveries')
      .innerJoin('outbox_messages', 'outbox_messages.id', 'webhook_deliveries.outbox_id')
      .select([
        'webhook_deliveries.id',
        'webhook_deliveries.webhook_id',
        'webhook_deliveries.message_id',
        'webhook_deliveries.event_type',
        'webhook_deliveries.last_status_code',
        'webhook_deliveries.created_at',
        'webhook_deliveries.updated_at',
        'webhook_deliveries.outbox_id',
        'outbox_messages.status as outbox_status',
        'outbox_messages.attempts as outbox_attempts',
        'outbox_messages.last_error',
        'outbox_messages.run_at',
      ]);
  }

  type DeliveryRow = Awaited<ReturnType<ReturnType<typeof deliveryQuery>['executeTakeFirstOrThrow']>>;

  async function deliveryRecords(rows: DeliveryRow[]): Promise<DeliveryRecord[]> {
    if (rows.length === 0) return [];
    // Attempts across manual retries: the attempt log, not only the current outbox item's count.
    const counts = await db
      .selectFrom('webhook_attempts')
      .select((eb) => ['delivery_id', eb.fn.countAll<number>().as('n')])
      .where(
        'delivery_id',
        'in',
        rows.map((row) => row.id),
      )
      .groupBy('delivery_id')
      .execute();
    const attempts = new Map(counts.map((row) => [row.delivery_id, row.n]));
    return rows.map((row) => {
      const status = deliveryStatusOf(row.outbox_status);
      return {
        id: row.id,
        webhook_id: row.webhook_id,
        message_id: row.message_id,
        event_type: row.event_type,
        status,
        attempts: attempts.get(row.id) ?? 0,
        last_status_code: row.last_status_code,
        last_error: status === 'delivered' ? null : row.last_error,
        next_attempt_at: status === 'pending' ? row.run_at : null,
        created_at: row.created_at,
        updated_at: row.updated_at,
      };
    });
  }

  return {
    async create(params: { url: string; events: string[]; description?: string | undefined }): Promise<{ id: number; secret: string }> {
      const url = await checkUrl(params.url);
      const events = checkEvents(params.events);
      const secret = newSecret();
      const now = nowIso();
      const row = await db
        .insertInto('webhooks')
        .values({
          url,
          description: params.description ?? null,
          events: JSON.stringify(events),
          secret_enc: secrets.encrypt(secret),
          enabled: 1,
          disabled_reason: null,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return { id: row.id, secret };
    },

    async list(params: { page?: number | undefined; per_page?: number | undefined }): Promise<Page<WebhookRecord>> {
      const request = pageRequest(params);
      const total = await db.selectFrom('webhooks').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await db.selectFrom('webhooks').selectAll().orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, rows.map(recordOf));
    },

    async get(id: number): Promise<WebhookRecord> {
      return recordOf(await requireWebhook(db, id));
    },

    async update(params: {
      id: number;
      url?: string | undefined;
      events?: string[] | undefined;
      description?: string | null | undefined;
      enabled?: boolean | undefined;
    }): Promise<WebhookRecord> {
      await requireWebhook(db, params.id);
      const url = params.url === undefined ? undefined : await checkUrl(params.url);
      const events = params.events === undefined ? undefined : checkEvents(params.events);
      const result = await db
        .updateTable('webhooks')
        .set({
          updated_at: nowIso(),
          ...(url !== undefined && { url }),
          ...(events !== undefined && { events: JSON.stringify(events) }),
          ...(params.description !== undefined && { description: params.description }),
          ...(params.enabled !== undefined && { enabled: params.enabled ? 1 : 0, disabled_reason: params.enabled ? null : 'Disabled by staff' }),
        })
        .where('id', '=', params.id)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) throw errors.notFound('Webhook');
      return recordOf(await requireWebhook(db, params.id));
    },

    /** Deletes the endpoint; its pending deliveries give up when they come due, the log stays. */
    async delete(id: number): Promise<void> {
      const result = await db.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
      if (Number(result.numDeletedRows) !== 1) throw errors.notFound('Webhook');
    },

    /** A new secret; the old one stops signing at once (pending retries are signed with the new one). */
    async rotateSecret(id: number): Promise<{ secret: string }> {
      const secret = newSecret();
      const result = await db
        .updateTable('webhooks')
        .set({ secret_enc: secrets.encrypt(secret), updated_at: nowIso() })
        .where('id', '=', id)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) throw errors.notFound('Webhook');
      return { secret };
    },

    /** Queues a `webhook.test` delivery to the endpoint; returns the delivery's id. */
    async sendTest(id: number): Promise<number> {
      return inTransaction(db, async (trx) => {
        const endpoint = await requireWebhook(trx, id);
        if (endpoint.enabled !== 1) throw errors.conflict('The endpoint is disabled; enable it first');
        return writeDelivery(trx, endpoint.id, TEST_EVENT, { webhook_id: endpoint.id, message: 'A test delivery from Tollgate' });
      });
    },

    async deliveries(params: {
      webhook_id?: number | undefined;
      status?: DeliveryStatus | undefined;
      page?: number | undefined;
      per_page?: number | undefined;
    }): Promise<Page<DeliveryRecord>> {
      const request = pageRequest(params);
      let query = deliveryQuery(db);
      if (params.webhook_id !== undefined) query = query.where('webhook_deliveries.webhook_id', '=', params.webhook_id);
      if (params.status !== undefined) {
        const status = outboxStatusOf[params.status];
        // not_sent never happens to a webhook; "failed" covers it anyway should a handler ever report it.
        query = params.status === 'failed' ? query.where('outbox_messages.status', 'in', ['failed', 'not_sent']) : query.where('outbox_messages.status', '=', status);
      }
      const total = await query.clearSelect().select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.orderBy('webhook_deliveries.id', 'desc').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, await deliveryRecords(rows));
    },

    /** One delivery with its body and every attempt, oldest first. */
    async delivery(id: number): Promise<DeliveryRecord & { body: string; attempt_log: AttemptRecord[] }> {
      const row = await deliveryQuery(db).select('webhook_deliveries.body').where('webhook_deliveries.id', '=', id).executeTakeFirst();
      if (row === undefined) throw errors.notFound('Delivery');
      const [record] = await deliveryRecords([row]);
      const attempts = await db
        .selectFrom('webhook_attempts')
        .select(['id', 'status_code', 'duration_ms', 'error', 'created_at'])
        .where('delivery_id', '=', id)
        .orderBy('id')
        .execute();
      return { ...record!, body: row.body, attempt_log: attempts };
    },

    /** Sends a delivery that failed or was delivered once more, now, with the same webhook-id and body. */
    async retry(id: number): Promise<true> {
      return inTransaction(db, async (trx) => {
        const row = await deliveryQuery(trx).where('webhook_deliveries.id', '=', id).executeTakeFirst();
        if (row === undefined) throw errors.notFound('Delivery');
        if (row.outbox_status === 'pending') throw errors.conflict('The delivery is still pending');
        const endpoint = await trx.selectFrom('webhooks').select(['id', 'enabled']).where('id', '=', row.webhook_id).executeTakeFirst();
        if (endpoint === undefined) throw errors.conflict('The endpoint was deleted');
        if (endpoint.enabled !== 1) throw errors.conflict('The endpoint is disabled; enable it first');
        const outboxId = await outbox.enqueue(trx, { kind: WEBHOOK_KIND, payload: { message_id: row.message_id } });
        // Compare-and-set: of two retries at once, one wins and the other is told so (its outbox item rolls back).
        const result = await trx
          .updateTable('webhook_deliveries')
          .set({ outbox_id: outboxId, updated_at: nowIso() })
          .where('id', '=', id)
          .where('outbox_id', '=', row.outbox_id)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The delivery was retried by another request');
        return true as const;
      });
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
