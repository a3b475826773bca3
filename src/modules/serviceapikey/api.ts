// serviceapikey: validating keys (guest), managing them (staff) and the customer's own keys (client). CONTRACT §7.
import { Type } from '@sinclair/typebox';
import { adminAction, clientAction, guestAction, type ModuleApi } from '../../http/action.ts';
import { CalendarDate, Done, Nullable, PageOf, Timestamp } from '../../http/result-schemas.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { VERIFIER_PERMISSION } from './events-route.ts';

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
/** Longer than any key can be (128 characters + 127 dashes), short enough to refuse junk before hashing it. */
const Key = Type.String({ minLength: 1, maxLength: 256 });
const Day = Type.String({ format: 'date', maxLength: 10 });
/** The end user's address as the operator's app saw it (IPv4 or IPv6 text). */
const Ip = Type.String({ minLength: 2, maxLength: 45, pattern: '^[0-9A-Fa-f.:]+$' });
const Config = Type.Record(Type.String({ maxLength: 64 }), Type.Unknown());
const ResetParams = Type.Object({ order_id: Type.Optional(Id), key: Type.Optional(Key) });
const UsageParams = Type.Object({ order_id: Id, from: Type.Optional(Day), to: Type.Optional(Day) });

const ReasonSchema = Type.Union(
  (['VALID', 'NOT_FOUND', 'DISABLED', 'CLIENT_INACTIVE', 'NOT_ACTIVE', 'EXPIRED', 'LIMIT_EXCEEDED'] as const).map((reason) => Type.Literal(reason)),
);
const Flag = Type.Union([Type.Literal(0), Type.Literal(1)]);
const CustomParams = Type.Record(Type.String(), Type.Unknown());
/** This month's uses of a key; limit and remaining are null for a plan without a monthly limit. */
const UsageSummarySchema = Type.Object({
  period_start: CalendarDate,
  period_end: CalendarDate,
  used: Type.Integer(),
  limit: Nullable(Type.Integer()),
  remaining: Nullable(Type.Integer()),
});
const keyInfoFields = {
  valid: Flag,
  /** The custom parameters, only while the key is valid. */
  config: Nullable(CustomParams),
  reason: ReasonSchema,
  /** Null for an unknown key. */
  usage: Nullable(UsageSummarySchema),
};
const KeyInfoSchema = Type.Object(keyInfoFields);
const VerifierInfoSchema = Type.Object({ ...keyInfoFields, order_id: Nullable(Type.Integer()), key_id: Nullable(Type.Integer()) });
const keyRecordFields = {
  order_id: Type.Integer(),
  api_key: Type.String(),
  valid: Flag,
  config: CustomParams,
  reason: ReasonSchema,
  created_at: Timestamp,
  updated_at: Timestamp,
};
const UsageReportSchema = Type.Object({ total: Type.Integer(), days: Type.Array(Type.Object({ date: CalendarDate, count: Type.Integer() })) });
const NewKey = Type.String({ minLength: 1 });

export const serviceApiKeyApi: ModuleApi = {
  name: 'serviceapikey',
  guest: {
    check: guestAction({
      params: Type.Object({ key: Key }),
      rateLimit: 'API_KEY_CHECK',
      summary: 'Whether a key is valid now (true/false); unknown keys are false',
      result: Type.Boolean(),
      handler: ({ key }, { services, ip, reply }) => services.apikeys.check(key, ip, reply),
    }),
    get_info: guestAction({
      params: Type.Object({ key: Key }),
      rateLimit: 'API_KEY_CHECK',
      summary: "A key's validity, custom parameters, reason and usage this month",
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
      result: Type.Boolean(),
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
      result: Done,
      handler: ({ batch_id, usage }, { services, identity }) => services.apikeys.reportUsage(batch_id, usage, identity.staff.id),
    }),
    update: adminAction({
      params: Type.Object({ order_id: Id, valid: Type.Optional(Type.Boolean()), config: Type.Optional(Config), api_key: Type.Optional(Key) }),
      permission: 'serviceapikey.manage',
      summary: "Switch a key's validity or replace its custom parameters (never the key: use reset)",
      result: Done,
      async handler(params, { services }) {
        await services.apikeys.update(params);
        return true;
      },
    }),
    reset: adminAction({
      params: ResetParams,
      permission: 'serviceapikey.manage',
      summary: 'Issue a new key for an active order; the old key stops validating at once',
      result: NewKey,
      handler: (params, { services }) => services.apikeys.reset(params),
    }),
    get: adminAction({
      params: Type.Object({ order_id: Id }),
      permission: 'serviceapikey.manage',
      summary: "An order's key with its validity switch, custom parameters and current reason",
      result: Type.Object({ ...keyRecordFields, client_id: Type.Integer() }),
      handler: ({ order_id }, { services }) => services.apikeys.get(order_id),
    }),
    usage: adminAction({
      params: UsageParams,
      permission: 'serviceapikey.manage',
      summary: 'Uses per day of an order\'s key (default: the current month)',
      result: UsageReportSchema,
      handler: (params, { services }) => services.apikeys.usage(params),
    }),
  },
  client: {
    reset: clientAction({
      params: ResetParams,
      summary: 'Issue a new key for one of your active orders',
      result: NewKey,
      handler: (params, { services, identity }) => services.apikeys.reset(params, identity.client.id),
    }),
    get_list: clientAction({
      params: Type.Object({ ...paginationParams }),
      summary: 'Your keys, newest first, with their validity and reason',
      result: PageOf(Type.Object(keyRecordFields)),
      handler: (params, { services, identity }) => services.apikeys.list(identity.client.id, params),
    }),
    usage: clientAction({
      params: UsageParams,
      summary: 'Uses per day of one of your keys (default: the current month)',
      result: UsageReportSchema,
      handler: (params, { services, identity }) => services.apikeys.usage(params, identity.client.id),
    }),
  },
};
