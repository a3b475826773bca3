// serviceapikey: validating keys (guest), managing them (staff) and the customer's own keys (client). CONTRACT §7.
import { Type } from '@sinclair/typebox';
import { adminAction, clientAction, guestAction, type ModuleApi } from '../../http/action.ts';
import { paginationParams } from '../../lib/paginator.ts';

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
/** Longer than any key can be (128 characters + 127 dashes), short enough to refuse junk before hashing it. */
const Key = Type.String({ minLength: 1, maxLength: 256 });
const Day = Type.String({ format: 'date', maxLength: 10 });
const Config = Type.Record(Type.String({ maxLength: 64 }), Type.Unknown());
const ResetParams = Type.Object({ order_id: Type.Optional(Id), key: Type.Optional(Key) });
const UsageParams = Type.Object({ order_id: Id, from: Type.Optional(Day), to: Type.Optional(Day) });

export const serviceApiKeyApi: ModuleApi = {
  name: 'serviceapikey',
  guest: {
    check: guestAction({
      params: Type.Object({ key: Key }),
      rateLimit: 'API_KEY_CHECK',
      summary: 'Whether a key is valid now (true/false); unknown keys are false',
      handler: ({ key }, { services, ip, reply }) => services.apikeys.check(key, ip, reply),
    }),
    get_info: guestAction({
      params: Type.Object({ key: Key }),
      rateLimit: 'API_KEY_CHECK',
      summary: "A key's validity, custom parameters, reason and usage this month",
      handler: ({ key }, { services, ip, reply }) => services.apikeys.getInfo(key, ip, reply),
    }),
  },
  admin: {
    update: adminAction({
      params: Type.Object({ order_id: Id, valid: Type.Optional(Type.Boolean()), config: Type.Optional(Config), api_key: Type.Optional(Key) }),
      permission: 'serviceapikey.manage',
      summary: "Switch a key's validity or replace its custom parameters (never the key: use reset)",
      async handler(params, { services }) {
        await services.apikeys.update(params);
        return true;
      },
    }),
    reset: adminAction({
      params: ResetParams,
      permission: 'serviceapikey.manage',
      summary: 'Issue a new key for an active order; the old key stops validating at once',
      handler: (params, { services }) => services.apikeys.reset(params),
    }),
    get: adminAction({
      params: Type.Object({ order_id: Id }),
      permission: 'serviceapikey.manage',
      handler: ({ order_id }, { services }) => services.apikeys.get(order_id),
    }),
    usage: adminAction({
      params: UsageParams,
      permission: 'serviceapikey.manage',
      summary: 'Uses per day of an order\'s key (default: the current month)',
      handler: (params, { services }) => services.apikeys.usage(params),
    }),
  },
  client: {
    reset: clientAction({
      params: ResetParams,
      summary: 'Issue a new key for one of your active orders',
      handler: (params, { services, identity }) => services.apikeys.reset(params, identity.client.id),
    }),
    get_list: clientAction({
      params: Type.Object({ ...paginationParams }),
      handler: (params, { services, identity }) => services.apikeys.list(identity.client.id, params),
    }),
    usage: clientAction({
      params: UsageParams,
      handler: (params, { services, identity }) => services.apikeys.usage(params, identity.client.id),
    }),
  },
};
