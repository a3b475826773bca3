// The result schemas of the serviceapikey actions (ActionDef.result, CONTRACT §7, §7.1, §11, §12).
import { Type } from '@sinclair/typebox';
import { CalendarDate, Done, Nullable, PageOf, Timestamp } from '../../http/result-schemas.ts';

export { Done };

const Reason = Type.Union(
  ['VALID', 'NOT_FOUND', 'DISABLED', 'CLIENT_INACTIVE', 'NOT_ACTIVE', 'EXPIRED', 'LIMIT_EXCEEDED', 'RATE_LIMITED'].map((reason) => Type.Literal(reason)),
);
const Config = Type.Record(Type.String(), Type.Unknown());
const Flag = Type.Union([Type.Literal(0), Type.Literal(1)]);

export const KeyString = Type.String({ description: 'The new key' });

export const UsageSummary = Type.Object({
  period_start: CalendarDate,
  period_end: CalendarDate,
  used: Type.Integer(),
  limit: Nullable(Type.Integer()),
  remaining: Nullable(Type.Integer()),
});

const infoFields = {
  valid: Flag,
  config: Nullable(Config),
  reason: Reason,
  usage: Nullable(UsageSummary),
  retry_after: Nullable(Type.Integer({ minimum: 1, description: 'Seconds until the per-key rate limit lets calls through (RATE_LIMITED)' })),
  rotating_until: Nullable(Timestamp),
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
export const UsageResult = Type.Object({ total: Type.Integer(), days: Type.Array(Type.Object({ date: CalendarDate, count: Type.Integer() })) });
