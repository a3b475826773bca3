// webhook: the operator's endpoints and their delivery log (CONTRACT §11), permission `webhook.manage`.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { Done, Nullable, PageOf, Timestamp } from '../../platform/schemas.ts';
import { paginationParams } from '../../lib/paginator.ts';
import type { WebhookService } from './service.ts';

/** The services this module's actions use. */
export interface WebhookNeeds {
  webhooks: Pick<
    WebhookService,
    'create' | 'list' | 'get' | 'update' | 'delete' | 'rotateSecret' | 'sendTest' | 'deliveries' | 'delivery' | 'retry'
  >;
}

const { adminAction } = actionsFor<WebhookNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const ById = Type.Object({ id: Id });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Events = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 64 });
const Description = Type.String({ maxLength: 255 });
const DeliveryStatus = Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]);
const PERMISSION = 'webhook.manage';

/** An endpoint as get/get_list/update answer it (WebhookRecord): never its secret. */
const Endpoint = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  description: Nullable(Type.String()),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
const deliveryFields = {
  id: Type.Integer(),
  webhook_id: Type.Integer(),
  message_id: Type.String(),
  event_type: Type.String(),
  status: DeliveryStatus,
  attempts: Type.Integer(),
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  next_attempt_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
};
const Attempt = Type.Object({
  id: Type.Integer(),
  status_code: Nullable(Type.Integer()),
  duration_ms: Type.Integer(),
  error: Nullable(Type.String()),
  created_at: Timestamp,
});
const Secret = Type.String({ pattern: '^whsec_' });

export const webhookApi: ModuleApi<WebhookNeeds> = {
  name: 'webhook',
  admin: {
    create: adminAction({
      params: Type.Object({ url: Url, events: Events, description: Type.Optional(Description) }),
      permission: PERMISSION,
      summary: 'Adds an endpoint; returns {id, secret}: the signing secret is shown here and by rotate_secret only',
      result: Type.Object({ id: Type.Integer(), secret: Secret }),
      handler: (params, { services }) => services.webhooks.create(params),
    }),
    get_list: adminAction({
      params: Type.Object({ ...paginationParams }),
      permission: PERMISSION,
      summary: 'The endpoints, newest first (without their secrets)',
      result: PageOf(Endpoint),
      handler: (params, { services }) => services.webhooks.list(params),
    }),
    get: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'One endpoint (without its secret)',
      result: Endpoint,
      handler: ({ id }, { services }) => services.webhooks.get(id),
    }),
    update: adminAction({
      params: Type.Object({
        id: Id,
        url: Type.Optional(Url),
        events: Type.Optional(Events),
        description: Type.Optional(Type.Union([Description, Type.Null()])),
        enabled: Type.Optional(Type.Boolean()),
      }),
      permission: PERMISSION,
      summary: 'Changes an endpoint’s URL, events, description, or switches it on or off; returns the endpoint',
      result: Endpoint,
      handler: (params, { services }) => services.webhooks.update(params),
    }),
    delete: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'Deletes an endpoint; its pending deliveries are dropped, the delivery log stays',
      result: Done,
      async handler({ id }, { services }) {
        await services.webhooks.delete(id);
        return true;
      },
    }),
    rotate_secret: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'A new signing secret, returned as {secret}; the old one stops signing at once',
      result: Type.Object({ secret: Secret }),
      handler: ({ id }, { services }) => services.webhooks.rotateSecret(id),
    }),
    send_test: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'Queues a `webhook.test` delivery to the endpoint; returns the delivery’s id',
      result: Type.Integer(),
      handler: ({ id }, { services }) => services.webhooks.sendTest(id),
    }),
    delivery_get_list: adminAction({
      params: Type.Object({ webhook_id: Type.Optional(Id), status: Type.Optional(DeliveryStatus), ...paginationParams }),
      permission: PERMISSION,
      summary: 'The delivery log, newest first: status, attempts, last status code and error, next attempt',
      result: PageOf(Type.Object(deliveryFields)),
      handler: (params, { services }) => services.webhooks.deliveries(params),
    }),
    delivery_get: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'One delivery with its body and every attempt (status code, duration, error)',
      result: Type.Object({ ...deliveryFields, body: Type.String(), attempt_log: Type.Array(Attempt) }),
      handler: ({ id }, { services }) => services.webhooks.delivery(id),
    }),
    delivery_retry: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'Sends a failed or delivered delivery again now, with the same webhook-id and body',
      result: Done,
      handler: ({ id }, { services }) => services.webhooks.retry(id),
    }),
  },
};
