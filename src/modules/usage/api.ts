// usage: metered events in (issue 23). `admin/usage/ingest` takes up to 1,000 events a call, from staff holding
// `usage.ingest` and from verifier tokens (the app servers that already check keys report what those keys used).
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { errors } from '../../platform/errors.ts';
import { hasPermission, type StaffPrincipal } from '../../platform/identity.ts';
import { MAX_EVENT_ID_LENGTH } from './event-checks.ts';
import type { UsageService } from './service.ts';

/** The staff permission that opens ingestion to people and integrations other than verifier tokens. */
export const USAGE_INGEST_PERMISSION = 'usage.ingest';
export const MAX_EVENTS_PER_BATCH = 1000;

/** The services this module's actions use. */
export interface UsageNeeds {
  usage: Pick<UsageService, 'ingest'>;
}

const { adminAction } = actionsFor<UsageNeeds>();

/**
 * A verifier token's group grants only `serviceapikey.check`, so a declared `permission: 'usage.ingest'` would shut it
 * out at the gateway. The action therefore declares none and decides here: a verifier (which reached this handler only
 * because the action opts in with `verifier: true`), or staff holding `usage.ingest`. The registry adds the
 * permission to the staff catalogue (src/modules/index.ts), so the panel offers it like any other.
 */
function requireIngestRight(staff: StaffPrincipal): void {
  if (staff.verifier) return;
  if (!hasPermission(staff, USAGE_INGEST_PERMISSION)) throw errors.forbidden(USAGE_INGEST_PERMISSION);
}

// Every field is typed loosely and optional on purpose: a wrong or missing field is a rejection of that event (with its
// index), never a 422 that drops the whole batch. The descriptions say what a sound event holds; event-checks.ts
// enforces it (`id` and `meter` are required there).
const UsageEvent = Type.Object(
  {
    id: Type.Optional(Type.Unknown({ description: `The event's idempotency key, unique per order (1–${MAX_EVENT_ID_LENGTH} characters): a repeat is counted once` })),
    key: Type.Optional(Type.Unknown({ description: 'The API key the usage is for (or order_id)' })),
    order_id: Type.Optional(Type.Unknown({ description: 'The order the usage is for (or key)' })),
    meter: Type.Optional(Type.Unknown({ description: "A meter's code on the order's plan; `calls` always exists" })),
    value: Type.Optional(Type.Unknown({ description: 'A finite number ≥ 0; required by sum, max and latest meters, refused by count meters' })),
    timestamp: Type.Optional(Type.Unknown({ description: 'ISO 8601 with a zone; default now; at most 7 days past and 5 minutes ahead' })),
    properties: Type.Optional(Type.Unknown({ description: 'An object; a unique_count meter counts one of its properties. The request body as a whole nests at most 32 levels (400 past that), which leaves 30 for the bag' })),
  },
  { $id: 'UsageEvent' },
);

const IngestResult = Type.Object(
  {
    accepted: Type.Integer({ minimum: 0, description: 'Events stored by this call' }),
    duplicates: Type.Integer({ minimum: 0, description: 'Events whose id was already stored for their order, or repeated in this batch: counted once' }),
    rejected: Type.Array(
      Type.Object({
        index: Type.Integer({ minimum: 0, description: "The event's position in `events`" }),
        code: Type.String({ description: 'INVALID_ID, INVALID_TARGET, UNKNOWN_KEY, UNKNOWN_ORDER, CLIENT_INACTIVE, UNKNOWN_METER, INVALID_VALUE, VALUE_NOT_ALLOWED, VALUE_REQUIRED, INVALID_TIMESTAMP, TIMESTAMP_OUT_OF_WINDOW, INVALID_PROPERTIES or PROPERTY_REQUIRED' }),
        message: Type.String(),
      }),
    ),
  },
  { $id: 'UsageIngestResult' },
);

export const usageApi: ModuleApi<UsageNeeds> = {
  name: 'usage',
  admin: {
    ingest: adminAction({
      // Usage telemetry, sent every second by SDKs: counted in usage, not an operator's change (docs/audit-log.md).
      audit: false,
      params: Type.Object({ events: Type.Array(UsageEvent, { maxItems: MAX_EVENTS_PER_BATCH }) }),
      // Machine traffic, like report_usage: the verifier policy rather than the hourly one of people's API calls.
      accountRateLimit: 'API_KEY_CHECK_VERIFIER',
      verifier: true,
      postOnly: true,
      summary: `Metered events in, exactly once per order and id (≤ ${MAX_EVENTS_PER_BATCH} a call) → {accepted, duplicates, rejected}. Needs \`${USAGE_INGEST_PERMISSION}\`, or a verifier token`,
      result: IngestResult,
      handler({ events }, { services, identity }) {
        requireIngestRight(identity.staff);
        return services.usage.ingest(events as Array<Record<string, unknown>>);
      },
    }),
  },
};
