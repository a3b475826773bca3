// serviceapikey: validating keys (guest), managing them (staff) and the customer's own keys (client). CONTRACT §7.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { FoundKey } from './results.ts';
import { VERIFIER_PERMISSION } from '../../platform/permissions.ts';
import { CreatedKey, Done, KeyInfoResult, KeyRecordWithKeys, KeyString, ListedKeys, UsageResult, VerifierInfoResult } from './key-results.ts';
import { MAX_GRACE_SECONDS } from './issuing/keys.ts';
import type { ApiKeyService } from './service.ts';
import { alertActions } from './alert-actions.ts';
import { analyticsActions } from './analytics-actions.ts';

/** The services this module's actions use. */
export interface ApiKeyNeeds {
  apikeys: Pick<
    ApiKeyService,
    | 'check'
    | 'getInfo'
    | 'verifierInfo'
    | 'reportUsage'
    | 'update'
    | 'reset'
    | 'find'
    | 'get'
    | 'usage'
    | 'createKey'
    | 'deleteKey'
    | 'renameKey'
    | 'list'
    | 'getAlerts'
    | 'setAlerts'
    | 'analytics'
    | 'analyticsNotFound'
    | 'keysByUse'
  >;
}

const { adminAction, clientAction, guestAction } = actionsFor<ApiKeyNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
/** Longer than any key can be (128 characters + 127 dashes), short enough to refuse junk before hashing it. */
const Key = Type.String({ minLength: 1, maxLength: 256 });
/** The guest check's and get_info's parameters. */
const GuestKeyParams = Type.Object({ key: Key });
const Day = Type.String({ format: 'date', maxLength: 10 });
/** The end user's address as the operator's app saw it (IPv4 or IPv6 text). */
const Ip = Type.String({ minLength: 2, maxLength: 45, pattern: '^[0-9A-Fa-f.:]+$' });
const Config = Type.Record(Type.String({ maxLength: 64 }), Type.Unknown());
const ResetParams = Type.Object({
  id: Type.Optional(Id),
  order_id: Type.Optional(Id),
  key: Type.Optional(Key),
  grace_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_GRACE_SECONDS })),
});
const UsageParams = Type.Object({ order_id: Id, key_id: Type.Optional(Id), from: Type.Optional(Day), to: Type.Optional(Day) });
const Name = Type.String({ maxLength: 100 });
const CreateParams = Type.Object({ order_id: Id, name: Type.Optional(Name) });
const RenameParams = Type.Object({ id: Id, name: Type.Union([Name, Type.Null()]) });

export const serviceApiKeyApi: ModuleApi<ApiKeyNeeds> = {
  name: 'serviceapikey',
  guest: {
    check: guestAction({
      params: GuestKeyParams,
      rateLimit: 'API_KEY_CHECK',
      direct: true,
      summary: 'Whether a key is valid now (true/false); unknown and rate-limited keys are false',
      result: Type.Boolean(),
      handler: ({ key }, { services, ip }) => services.apikeys.check(key, ip),
    }),
    get_info: guestAction({
      params: GuestKeyParams,
      rateLimit: 'API_KEY_CHECK',
      direct: true,
      summary: "A key's validity, custom parameters, reason (RATE_LIMITED with retry_after), usage this period with its projected overage, and rotation",
      result: KeyInfoResult,
      handler: ({ key }, { services, ip }) => services.apikeys.getInfo(key, ip),
    }),
  },
  admin: {
    // Verifier credentials (CONTRACT §11): an app server checking its users' keys. Its only limit is
    // API_KEY_CHECK_VERIFIER per account; failed lookups count against the end user's `ip` it names.
    check: adminAction({
      params: Type.Object({ key: Key, ip: Type.Optional(Ip) }),
      permission: VERIFIER_PERMISSION,
      accountRateLimit: 'API_KEY_CHECK_VERIFIER',
      verifier: true,
      summary: "For app servers: whether a key is valid now; failed lookups count against the end user's ip",
      result: Type.Boolean(),
      handler: ({ key, ip }, { services }) => services.apikeys.check(key, ip ?? null),
    }),
    get_info: adminAction({
      params: Type.Object({ key: Key, ip: Type.Optional(Ip) }),
      permission: VERIFIER_PERMISSION,
      accountRateLimit: 'API_KEY_CHECK_VERIFIER',
      verifier: true,
      summary: "For app servers: a key's validity, parameters, reason, usage, order_id and key_id",
      result: VerifierInfoResult,
      handler: ({ key, ip }, { services }) => services.apikeys.verifierInfo(key, ip ?? null),
    }),
    report_usage: adminAction({
      // Usage telemetry, sent every second by SDKs: counted in usage, not an operator's change (docs/audit-log.md).
      audit: false,
      params: Type.Object({
        batch_id: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' }),
        usage: Type.Array(Type.Object({ key_id: Id, count: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }) }), { maxItems: 10_000 }),
      }),
      permission: VERIFIER_PERMISSION,
      accountRateLimit: 'API_KEY_CHECK_VERIFIER',
      verifier: true,
      summary: "For app servers: add uses answered from the SDK's cache; a batch_id already seen adds nothing",
      result: Done,
      handler: ({ batch_id, usage }, { services, identity }) => services.apikeys.reportUsage(batch_id, usage, identity.staff.id),
    }),
    update: adminAction({
      params: Type.Object({ order_id: Id, valid: Type.Optional(Type.Boolean()), config: Type.Optional(Config), api_key: Type.Optional(Key) }),
      permission: 'serviceapikey.manage',
      summary: "Switch the validity or replace the custom parameters of an order's keys (never a key: use reset)",
      result: Done,
      async handler(params, { services }) {
        await services.apikeys.update(params);
        return true;
      },
    }),
    reset: adminAction({
      params: ResetParams,
      permission: 'serviceapikey.manage',
      summary: 'Issue a new key for an active order (by id, order_id or key); the old one validates for grace_seconds more',
      result: KeyString,
      handler: (params, { services }) => services.apikeys.reset(params),
    }),
    find: adminAction({
      params: Type.Object({ key: Key }),
      permission: 'serviceapikey.manage',
      summary: 'The order and client behind a key (found by its hash; the key is never listed or echoed); 404 for an unknown key',
      result: FoundKey,
      handler: ({ key }, { services }) => services.apikeys.find(key),
    }),
    get: adminAction({
      params: Type.Object({ order_id: Id }),
      permission: 'serviceapikey.manage',
      summary: "An order's first key, and every key of the order in keys (id, name, key, validity)",
      result: KeyRecordWithKeys,
      handler: ({ order_id }, { services }) => services.apikeys.get(order_id),
    }),
    usage: adminAction({
      params: UsageParams,
      permission: 'serviceapikey.manage',
      summary: "Uses per day of an order's keys, or of one key with key_id (default: the current month), and each plan meter's days and figures this period",
      result: UsageResult,
      handler: (params, { services }) => services.apikeys.usage(params),
    }),
    create: adminAction({
      params: CreateParams,
      permission: 'serviceapikey.manage',
      summary: "Add a key to an active order, up to its plan's max_keys (409 past it)",
      result: CreatedKey,
      handler: (params, { services }) => services.apikeys.createKey(params),
    }),
    delete: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'serviceapikey.manage',
      summary: "Delete one of an order's keys at once, everywhere (409 for the order's last key); its uses stay counted",
      result: Done,
      async handler({ id }, { services }) {
        await services.apikeys.deleteKey(id);
        return true as const;
      },
    }),
    rename: adminAction({
      params: RenameParams,
      permission: 'serviceapikey.manage',
      summary: 'Name a key (null or empty clears the name)',
      result: Done,
      async handler({ id, name }, { services }) {
        await services.apikeys.renameKey(id, name);
        return true as const;
      },
    }),
    ...alertActions.admin,
    ...analyticsActions.admin,
  },
  client: {
    reset: clientAction({
      params: ResetParams,
      summary: 'Issue a new key for one of your active orders; grace_seconds keeps the old one working that long',
      result: KeyString,
      handler: (params, { services, identity }) => services.apikeys.reset(params, identity.client.id),
    }),
    get_list: clientAction({
      params: Type.Object({ ...paginationParams, order_id: Type.Optional(Id) }),
      summary: 'Your keys (of one order with order_id), newest first, each with its id, name and order',
      result: ListedKeys,
      handler: (params, { services, identity }) => services.apikeys.list(identity.client.id, params),
    }),
    usage: clientAction({
      params: UsageParams,
      summary: "Uses per day of your order's keys, or of one key with key_id (default: the current month), and each plan meter's days and figures this period",
      result: UsageResult,
      handler: (params, { services, identity }) => services.apikeys.usage(params, identity.client.id),
    }),
    create: clientAction({
      params: CreateParams,
      summary: "Add a key to one of your active orders, up to its plan's max_keys (409 past it)",
      result: CreatedKey,
      handler: (params, { services, identity }) => services.apikeys.createKey(params, identity.client.id),
    }),
    delete: clientAction({
      params: Type.Object({ id: Id }),
      summary: "Delete one of your keys at once (409 for an order's last key: reset it instead)",
      result: Done,
      async handler({ id }, { services, identity }) {
        await services.apikeys.deleteKey(id, identity.client.id);
        return true as const;
      },
    }),
    rename: clientAction({
      params: RenameParams,
      summary: 'Name one of your keys (null or empty clears the name)',
      result: Done,
      async handler({ id, name }, { services, identity }) {
        await services.apikeys.renameKey(id, name, identity.client.id);
        return true as const;
      },
    }),
    ...alertActions.client,
    ...analyticsActions.client,
  },
};
