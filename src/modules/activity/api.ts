// activity: the audit log for staff (docs/audit-log.md). FOSSBilling's `admin/activity/log_get_list` with its list
// shape (each entry's `staff` {id, name, email}, `priority`, `message`, `ip`), plus who / what / target filters and
// each entry's changes. Entries are written by the gateway's recorder and the scheduler, never through an action:
// FOSSBilling's `log` and `log_email` (staff writing arbitrary entries) are left out, an audit log staff can write to
// proves nothing.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { Nullable, PageOf } from '../../platform/schemas.ts';
import { paginationParams } from '../../lib/paginator.ts';
import type { ActivityService } from './service.ts';

/** The services this module's actions use. */
export interface ActivityNeeds {
  activity: Pick<ActivityService, 'list'>;
}

const { adminAction } = actionsFor<ActivityNeeds>();

export const ACTOR_TYPES = ['staff', 'api_token', 'verifier', 'system', 'guest'] as const;
const ActorType = Type.Union(ACTOR_TYPES.map((type) => Type.Literal(type)));
const DateText = Type.String({ maxLength: 40, description: 'YYYY-MM-DD (the whole day) or an ISO 8601 moment' });

/** The filters of the list and of its CSV export (`/api/admin/export/activity.csv`). */
export const ActivityFilterParams = {
  search: Type.Optional(Type.String({ maxLength: 255, description: 'Text in the message, the action or the staff name' })),
  admin_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Who: the staff member (or token owner)' })),
  actor_type: Type.Optional(ActorType),
  action: Type.Optional(Type.String({ maxLength: 100, description: 'What: an action (admin/order/update), or every action of a module (admin/order/)' })),
  target_type: Type.Optional(Type.String({ maxLength: 50, description: 'The target\'s type: client, product, order, invoice, setting, staff…' })),
  target_id: Type.Optional(Type.String({ maxLength: 100 })),
  ip: Type.Optional(Type.String({ maxLength: 64 })),
  priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 7 })),
  min_priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 7, description: 'Entries of this priority or more urgent (FOSSBilling: 6 info, 4 warning)' })),
  date_from: Type.Optional(DateText),
  date_to: Type.Optional(DateText),
};

const Change = Type.Union([
  Type.Object({ field: Type.String(), from: Type.Unknown(), to: Type.Unknown() }),
  Type.Object({ field: Type.String(), changed: Type.Literal(true, { description: 'A secret: only that it changed, never its value' }) }),
]);

export const ActivityEntrySchema = Type.Object(
  {
    id: Type.Integer(),
    priority: Type.Integer(),
    message: Type.String(),
    ip: Nullable(Type.String()),
    created_at: Type.String(),
    admin_id: Nullable(Type.Integer()),
    client_id: Type.Null({ description: 'FOSSBilling\'s client column: always null, client actions are not audited' }),
    staff: Nullable(Type.Object({ id: Type.Integer(), name: Nullable(Type.String()), email: Nullable(Type.String()) })),
    actor_type: ActorType,
    action: Type.String(),
    target_type: Nullable(Type.String()),
    target_id: Nullable(Type.String()),
    changes: Type.Array(Change),
  },
  { $id: 'ActivityEntry' },
);

export const activityApi: ModuleApi<ActivityNeeds> = {
  name: 'activity',
  admin: {
    log_get_list: adminAction({
      params: Type.Object({ ...ActivityFilterParams, ...paginationParams }),
      permission: 'activity.view',
      summary: 'The audit log, newest first: who (staff, API token, verifier, system) did what to which target from which address, and the fields changed (secrets only as changed)',
      result: PageOf(ActivityEntrySchema),
      handler: (params, { services }) => services.activity.list(params),
    }),
  },
};
