// serviceapikey: validating keys (guest), managing them (staff) and the customer's own keys (client). CONTRACT §7.
import { Type } from '@sinclair/typebox';
import { adminAction, clientAction, guestAction, type ModuleApi } from '../../http/action.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { VERIFIER_PERMISSION } from './events-route.ts';
import { KeyInfoSchema, VerifierInfoSchema } from './info-schema.ts';

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
/** Longer than any key can be (128 characters + 127 dashes), short enough to refuse junk before hashing it. */
const Key = Type.String({ minLength: 1, maxLength: 256 });
const Day = Type.String({ format: 'date', maxLength: 10 });
/** The end user's address as the operator's app saw it (IPv4 or IPv6 text). */
const Ip = Type.String({ minLength: 2, maxLength: 45, pattern: '^[0-9A-Fa-f.:]+$' });
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
      summary: "A key's validity, custom parameters, reason, and usage this period with its projected overage",
      result: KeyInfoSchema,
      handler: ({ key }, { services, ip, reply }) => services.apikeys.getInfo(key, ip, reply),
    }),
  },
  admin: {
    // Verifier credentials (CONTRACT §11): an app server checking its users' keys. Its only limit is
    // API_KEY_CHECK_VERIFIER per account; failed lookups count against the end user's `ip` it names.
    check: adminAction({
      params: Type.Object({ key: Key, ip: Type.Optional(Ip) }),
      permission: VERIFIER_PERMISSION,
      accountRateLimit: 'API_KEY_CHECK_VERIFIER',
      summary: "For app servers: whether a key is valid now; failed lookups count against the end user's ip",
      handler: ({ key, ip }, { services, reply }) => services.apikeys.verifierCheck(key, ip ?? null, reply),
    }),
    get_info: adminAction({
      params: Type.Object({ key: Key, ip: Type.Optional(Ip) }),
      permission: VERIFIER_PERMISSION,
      accountRateLimit: 'API_KEY_CHECK_VERIFIER',
      summary: "For app servers: a key's validity, parameters, reason, usage, order_id and key_id",
      result: VerifierInfoSchema,
      handler: ({ key, ip }, { services, reply }) => services.apikeys.verifierInfo(key, ip ?? null, reply),
    }),
    report_usage: adminAction({
      params: Type.Object({
        batch_id: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' }),
        usage: Type.Array(Type.Object({ key_id: Id, count: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }) }), { maxItems: 10_000 }),
      }),
      permission: VERIFIER_PERMISSION,
      accountRateLimit: 'API_KEY_CHECK_VERIFIER',
      summary: "For app servers: add uses answered from the SDK's cache; a batch_id already seen adds nothing",
      handler: ({ batch_id, usage }, { services, identity }) => services.apikeys.reportUsage(batch_id, usage, identity.staff.id),
    }),
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
