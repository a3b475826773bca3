// The database as Kysely sees it: the intersection of each area's tables, so each table's type lives with its area.
import type { AccountTables } from './tables/accounts.ts';
import type { ApiKeyTables } from './tables/apikey.ts';
import type { BillingTables } from './tables/billing.ts';
import type { CoreTables } from './tables/core.ts';
import type { CronTables } from './tables/cron.ts';
import type { KeysTables } from './tables/keys.ts';
import type { OutboxTables } from './tables/outbox.ts';
import type { SellingTables } from './tables/selling.ts';
import type { PaymentTables } from './tables/payments.ts';
import type { VerifierTables } from './tables/verifier.ts';
import type { WebhookTables } from './tables/webhook.ts';
import type { UsageBillingTables } from './tables/usage-billing.ts';
import type { SearchTables } from './tables/search.ts';

export type Database = CoreTables & SellingTables & ApiKeyTables & BillingTables & PaymentTables & OutboxTables & AccountTables & VerifierTables & WebhookTables & UsageBillingTables & KeysTables & SearchTables & CronTables;
