// The database as Kysely sees it: the intersection of each area's tables, so each table's type lives with its area.
import type { ApiKeyTables } from './tables/apikey.ts';
import type { CoreTables } from './tables/core.ts';
import type { OutboxTables } from './tables/outbox.ts';
import type { SellingTables } from './tables/selling.ts';
import type { WebhookTables } from './tables/webhook.ts';

export type Database = CoreTables & SellingTables & ApiKeyTables & OutboxTables & WebhookTables;
