// The serviceapikey actions of key analytics (issue 25): a key's or an order's answers per bucket and outcome, for
// staff and for the client who owns the key, and (staff only) the lookups of unknown keys per address. Kept apart
// from api.ts, which spreads them into its roles; the logic is analytics/.
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import { KEY_OUTCOMES, UNITS } from './analytics/outcomes.ts';
import { DEFAULT_UNIT, RANGES } from './analytics/ranges.ts';
import type { ApiKeyService } from './service.ts';
import { paginationParams } from '../../lib/paginator.ts';

/** The services these actions use (api.ts names them in ApiKeyNeeds too, so services.ts proves they are built). */
export interface AnalyticsNeeds {
  apikeys: Pick<ApiKeyService, 'analytics' | 'analyticsNotFound' | 'keysByUse'>;
}

export const ANALYTICS_PERMISSION = 'serviceapikey.analytics';

const { adminAction, clientAction } = actionsFor<AnalyticsNeeds>();

const Range = Type.Union(
  RANGES.map((range) => Type.Literal(range)),
  { description: 'The last 24 hours, 30 days or 12 months (365 days), ending now' },
);
const Granularity = Type.Union(
  UNITS.map((unit) => Type.Literal(unit)),
  {
    description: `The bucket size; default ${Object.entries(DEFAULT_UNIT)
      .map(([range, unit]) => `${unit} for ${range}`)
      .join(', ')}. Minutes are served for 24h only, hours for 24h and 30d (422 otherwise)`,
  },
);
const AnalyticsParams = Type.Object({
  id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'A key id (one of id and order_id)' })),
  order_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: "An order id: the sum over all the order's keys" })),
  range: Range,
  granularity: Type.Optional(Granularity),
});

const Count = Type.Integer({ minimum: 0 });
const Point = Type.Object({
  at: Type.String({ format: 'date-time', description: "The bucket's first instant (UTC)" }),
  ...Object.fromEntries(KEY_OUTCOMES.map((outcome) => [outcome, Count])),
  not_found: Type.Integer({ minimum: 0, description: 'Always 0 for a key: unknown keys are counted per address (admin analytics_not_found)' }),
});
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const AnalyticsResult = Type.Object({
  key_id: Nullable(Type.Integer({ description: 'The key asked about; null for an order' })),
  order_id: Type.Integer(),
  range: Range,
  granularity: Granularity,
  series: Type.Array(Point, { description: 'Every bucket of the range, oldest first, zero-filled' }),
  last_used_at: Nullable(Type.String({ format: 'date-time', description: 'The last answer about the key (any outcome)' })),
  last_used_ip: Nullable(Type.String({ description: "That answer's caller address (a verifier's ip); null when none was named" })),
});

const NotFoundResult = Type.Object({
  range: Range,
  granularity: Granularity,
  series: Type.Array(Type.Object({ at: Type.String({ format: 'date-time' }), not_found: Count })),
  top: Type.Array(Type.Object({ ip: Nullable(Type.String()), not_found: Count }), { description: 'The addresses with most lookups of unknown keys in the range, most first' }),
});

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const OrderStatus = Type.Union((['pending_setup', 'failed_setup', 'active', 'suspended', 'canceled'] as const).map((status) => Type.Literal(status)), { description: "The order's status" });
const KeyByUse = Type.Object({
  id: Type.Integer(),
  name: Nullable(Type.String()),
  order_id: Type.Integer(),
  order_title: Type.String(),
  order_status: Type.String(),
  client_id: Type.Integer(),
  client_name: Type.String(),
  client_email: Type.String(),
  valid: Type.Union([Type.Literal(0), Type.Literal(1)]),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Nullable(Type.String({ format: 'date-time', description: 'The last answer about the key (any outcome); null: never used' })),
  last_used_ip: Nullable(Type.String()),
});
const KeysByUse = Type.Object({
  list: Type.Array(KeyByUse),
  page: Type.Integer(),
  per_page: Type.Integer(),
  pages: Type.Integer(),
  total: Type.Integer(),
});

export const analyticsActions = {
  admin: {
    get_list: adminAction({
      params: Type.Object({
        ...paginationParams,
        sort: Type.Optional(Type.Union([Type.Literal('last_used'), Type.Literal('newest')], { description: 'last_used (default): most recently used first, never-used last; newest: newest key first' })),
        status: Type.Optional(OrderStatus),
        order_id: Type.Optional(Id),
        client_id: Type.Optional(Id),
      }),
      permission: 'serviceapikey.manage',
      summary: 'Keys (not deleted) with their order, plan, client and last use, sorted by last use or newest',
      result: KeysByUse,
      handler: (params, { services }) => services.apikeys.keysByUse(params),
    }),
    analytics: adminAction({
      params: AnalyticsParams,
      permission: ANALYTICS_PERMISSION,
      summary: "A key's (id) or an order's (order_id) answers per bucket and outcome over 24h, 30d or 12m, zero-filled, and its last use",
      result: AnalyticsResult,
      handler: (params, { services }) => services.apikeys.analytics(params),
    }),
    analytics_not_found: adminAction({
      params: Type.Object({ range: Range, granularity: Type.Optional(Granularity), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })) }),
      permission: ANALYTICS_PERMISSION,
      summary: 'Lookups of unknown keys per bucket, and the addresses making most of them (top `limit`, default 20)',
      result: NotFoundResult,
      handler: (params, { services }) => services.apikeys.analyticsNotFound(params),
    }),
  },
  client: {
    analytics: clientAction({
      params: AnalyticsParams,
      summary: "One of your keys' (id) or orders' (order_id) answers per bucket and outcome over 24h, 30d or 12m, and its last use",
      result: AnalyticsResult,
      handler: (params, { services, identity }) => services.apikeys.analytics(params, identity.client.id),
    }),
  },
};
