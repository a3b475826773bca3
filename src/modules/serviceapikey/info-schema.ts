// The result schema of get_info (CONTRACT §7.1, §11, §12), shared by the guest and the verifier actions.
import { Type } from '@sinclair/typebox';
import { Money, Nullable } from '../../http/result-schemas.ts';

export const UsageSummarySchema = Type.Object({
  period_start: Type.String({ description: 'Calendar month: its first day (YYYY-MM-DD); billing period: its start (ISO 8601)' }),
  period_end: Type.String({ description: 'Calendar month: its last day (YYYY-MM-DD); billing period: its end, exclusive (ISO 8601)' }),
  used: Type.Integer(),
  limit: Nullable(Type.Integer()),
  remaining: Nullable(Type.Integer()),
  included: Nullable(Type.Integer({ description: 'Uses included per period; null: unlimited' })),
  overage_units: Type.Integer({ description: 'Uses beyond the included ones, billed at the close of the period' }),
  overage_amount: Nullable(Money),
  hard_limit: Nullable(Type.Integer()),
});

const Reason = Type.Union(['VALID', 'NOT_FOUND', 'DISABLED', 'CLIENT_INACTIVE', 'NOT_ACTIVE', 'EXPIRED', 'LIMIT_EXCEEDED'].map((reason) => Type.Literal(reason)));

export const KeyInfoSchema = Type.Object({
  valid: Type.Union([Type.Literal(0), Type.Literal(1)]),
  config: Nullable(Type.Record(Type.String(), Type.Unknown())),
  reason: Reason,
  usage: Nullable(UsageSummarySchema),
});

export const VerifierInfoSchema = Type.Intersect([KeyInfoSchema, Type.Object({ order_id: Nullable(Type.Integer()), key_id: Nullable(Type.Integer()) })]);
