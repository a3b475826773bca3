// webhook: the operator's endpoints and their delivery log (CONTRACT §11), permission `webhook.manage`.
import { Type } from '@sinclair/typebox';
import { adminAction, type ModuleApi } from '../../http/action.ts';
import { paginationParams } from '../../lib/paginator.ts';

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const ById = Type.Object({ id: Id });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Events = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 64 });
const Description = Type.String({ maxLength: 255 });
const DeliveryStatus = Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]);
const PERMISSION = 'webhook.manage';

export const webhookApi: ModuleApi = {
  name: 'webhook',
  admin: {
    create: adminAction({
      params: Type.Object({ url: Url, events: Events, description: Type.Optional(Description) }),
      permission: PERMISSION,
      summary: 'Adds an endpoint; returns {id, secret}: the signing secret is shown here and by rotate_secret only',
      handler: (params, { services }) => services.webhooks.create(params),
    }),
    get_list: adminAction({
      params: Type.Object({ ...paginationParams }),
      permission: PERMISSION,
      summary: 'The endpoints, newest first (without their secrets)',
      handler: (params, { services }) => services.webhooks.list(params),
    }),
    get: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'One endpoint (without its secret)',
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
      handler: (params, { services }) => services.webhooks.update(params),
    }),
    delete: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'Deletes an endpoint; its pending deliveries are dropped, the delivery log stays',
      async handler({ id }, { services }) {
        await services.webhooks.delete(id);
        return true;
      },
    }),
    rotate_secret: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'A new signing secret, returned as {secret}; the old one stops signing at once',
      handler: ({ id }, { services }) => services.webhooks.rotateSecret(id),
    }),
    send_test: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'Queues a `webhook.test` delivery to the endpoint; returns the delivery’s id',
      handler: ({ id }, { services }) => services.webhooks.sendTest(id),
    }),
    delivery_get_list: adminAction({
      params: Type.Object({ webhook_id: Type.Optional(Id), status: Type.Optional(DeliveryStatus), ...paginationParams }),
      permission: PERMISSION,
      summary: 'The delivery log, newest first: status, attempts, last status code and error, next attempt',
      handler: (params, { services }) => services.webhooks.deliveries(params),
    }),
    delivery_get: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'One delivery with its body and every attempt (status code, duration, error)',
      handler: ({ id }, { services }) => services.webhooks.delivery(id),
    }),
    delivery_retry: adminAction({
      params: ById,
      permission: PERMISSION,
      summary: 'Sends a failed or delivered delivery again now, with the same webhook-id and body',
      handler: ({ id }, { services }) => services.webhooks.retry(id),
    }),
  },
};
