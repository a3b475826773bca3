// Result schemas (CONTRACT §11) of the serviceapikey actions added for the admin panel.
import { Type } from '@sinclair/typebox';

const REASONS = ['VALID', 'NOT_FOUND', 'DISABLED', 'CLIENT_INACTIVE', 'NOT_ACTIVE', 'EXPIRED', 'LIMIT_EXCEEDED', 'TRIAL_ENDED', 'NO_CREDIT'] as const;

/** admin/serviceapikey/find: where a pasted key belongs, and whether check accepts it now. */
export const FoundKey = Type.Object({
  order_id: Type.Integer(),
  client_id: Type.Integer(),
  valid: Type.Union([Type.Literal(0), Type.Literal(1)]),
  reason: Type.Union(REASONS.map((reason) => Type.Literal(reason))),
});
