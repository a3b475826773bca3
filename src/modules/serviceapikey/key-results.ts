// The result schemas of the serviceapikey actions (ActionDef.result, CONTRACT §7, §7.1, §11, §12).
import { Type } from '@sinclair/typebox';
import { AGGREGATIONS } from '../../lib/meters/events.ts';
import { CalendarDate, Done, Money, Nullable, PageOf, Timestamp } from '../../platform/schemas.ts';

export { Done };

const Reason = Type.Union(
  ['VALID', 'NOT_FOUND', 'DISABLED', 'CLIENT_INACTIVE', 'NOT_ACTIVE', 'EXPIRED', 'LIMIT_EXCEEDED', 'RATE_LIMITED', 'TRIAL_ENDED', 'NO_CREDIT'].map((reason) => Type.Literal(reason)),
);
const Config = Type.Record(Type.String(), Type.Unknown());
const Flag = Type.Union([Type.Literal(0), Type.Literal(1)]);

export const KeyString = Type.String({ description: 'The new key' });

/** One meter of the plan this period (issue 23): what it measured and its figures, priced as the close bills them. */
export const MeterSummary = Type.Object({
  code: Type.String(),
  name: Type.String(),
  unit: Type.String(),
  aggregation: Type.Union(AGGREGATIONS.map((aggregation) => Type.Literal(aggregation))),
  used: Type.Integer({ description: "The period's quantity so far (count, sum, max, unique count or latest value)" }),
  included: Nullable(Type.Integer({ description: 'Units included per period; null: unlimited' })),
  overage_units: Type.Integer({ description: 'Units beyond the included ones, billed at the close of the period' }),
  overage_amount: Nullable(Money),
  hard_limit: Nullable(Type.Integer({ description: 'The quantity at which check refuses the order’s keys (LIMIT_EXCEEDED); null: none' })),
});

/** A key's usage this period (the order's, over all its keys) with the plan's figures and projected overage. */
export const UsageSummary = Type.Object({
  period_start: Type.String({ description: 'Calendar month: its first day (YYYY-MM-DD); billing period: its start (ISO 8601)' }),
  period_end: Type.String({ description: 'Calendar month: its last day (YYYY-MM-DD); billing period: its end, exclusive (ISO 8601)' }),
  used: Type.Integer(),
  limit: Nullable(Type.Integer()),
  remaining: Nullable(Type.Integer()),
  included: Nullable(Type.Integer({ description: 'Uses included per period; null: unlimited' })),
  overage_units: Type.Integer({ description: 'Uses beyond the included ones, billed at the close of the period' }),
  overage_amount: Nullable(Money),
  hard_limit: Nullable(Type.Integer()),
  limited_by: Nullable(
    Type.String({ description: 'The meter whose hard limit the order has reached this period (`calls`: the built-in one, or its enforced quota), so check refuses its keys; null: none' }),
  ),
  meters: Type.Array(MeterSummary, { description: "The plan's own meters, each with this period's quantity and figures (empty: none)" }),
});

const infoFields = {
  valid: Flag,
  config: Nullable(Config),
  reason: Reason,
  usage: Nullable(UsageSummary),
  retry_after: Nullable(Type.Integer({ minimum: 1, description: 'Seconds until the per-key rate limit lets calls through (RATE_LIMITED)' })),
  rotating_until: Nullable(Timestamp),
  credit: Type.Optional(
    Type.Object(
      { balance: Money, currency: Type.String({ description: 'ISO 4217' }) },
      { description: 'Prepaid plans only: the client’s balance less what this process’s unflushed uses cost (NO_CREDIT at the plan’s floor)' },
    ),
  ),
};

export const KeyInfoResult = Type.Object(infoFields);
export const VerifierInfoResult = Type.Object({ ...infoFields, order_id: Nullable(Type.Integer()), key_id: Nullable(Type.Integer()) });

const recordFields = {
  id: Type.Integer(),
  name: Nullable(Type.String()),
  order_id: Type.Integer(),
  api_key: Type.String(),
  valid: Flag,
  config: Config,
  reason: Reason,
  rotating_until: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
};

export const KeyRecordResult = Type.Object({ ...recordFields, client_id: Type.Integer() });
export const KeyRecordWithKeys = Type.Object({ ...recordFields, client_id: Type.Integer(), keys: Type.Array(KeyRecordResult) });
export const ListedKeys = PageOf(Type.Object(recordFields));
export const CreatedKey = Type.Object({ id: Type.Integer(), api_key: Type.String(), name: Nullable(Type.String()) });
/** One of the plan's own meters on the days read, with its figures this usage period (issue 23 item 4). */
const MeterUsage = Type.Object({
  code: Type.String(),
  name: Type.String(),
  unit: Type.String(),
  aggregation: Type.Union(AGGREGATIONS.map((aggregation) => Type.Literal(aggregation))),
  series: Type.Array(
    Type.Object({
      day: CalendarDate,
      quantity: Nullable(Type.Integer({ description: "The day's measure; 0 when nothing was measured, null on a latest meter nobody reported that day" })),
    }),
  ),
  used: Type.Integer({ description: "This period's quantity so far (count, sum, max, unique count or latest value)" }),
  included: Nullable(Type.Integer({ description: 'Units included per period; null: unlimited' })),
  overage_units: Type.Integer(),
  overage_amount: Nullable(Money),
  hard_limit: Nullable(Type.Integer()),
});
export const UsageResult = Type.Object({
  total: Type.Integer(),
  days: Type.Array(Type.Object({ date: CalendarDate, count: Type.Integer() })),
  meters: Type.Array(MeterUsage, { description: "The plan's own meters (none: empty), over the same days as `days`; `calls` is `days` and `total`" }),
});
