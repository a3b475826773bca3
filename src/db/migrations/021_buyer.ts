// What the buyer pays and who is asked for a billing country (issue 21 items 5 and 8).
//
// 1. `clients.self_signup`: whether a client signed itself up. Checkout asks a self-signed-up client for its billing
//    country while tax rules exist; accounts staff create are staff's to complete. Accounts from before this
//    migration are marked from what they left behind: staff-created accounts were confirmed at creation
//    (email_verified_at equal to created_at, the same instant), self sign-ups were not (still unconfirmed, or
//    confirmed later).
// 2. API key plans priced by use (`included`, `overage` or `hard_limit` set) now count by `billing_period` unless they
//    say otherwise (serviceapikey/product-type.ts). Such plans saved before without a `usage_period` counted by
//    calendar month, and keep doing so: the migration writes `usage_period: "calendar_month"` into their config, so
//    the next save does not change their periods.
import { sql } from 'kysely';
import type { AnyDb } from './helpers.ts';

const USAGE_OPTIONS = ['included', 'overage', 'hard_limit'];

function parse(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('clients').addColumn('self_signup', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await sql`UPDATE clients SET self_signup = 1 WHERE email_verified_at IS NULL OR email_verified_at <> created_at`.execute(db);

  const products = (await db.selectFrom('products').select(['id', 'config']).where('type', '=', 'apikey').execute()) as Array<{ id: number; config: string }>;
  for (const product of products) {
    const config = parse(product.config);
    if (config === null || config.usage_period !== undefined) continue;
    if (!USAGE_OPTIONS.some((name) => config[name] !== undefined && config[name] !== null)) continue;
    await db
      .updateTable('products')
      .set({ config: JSON.stringify({ ...config, usage_period: 'calendar_month' }) })
      .where('id', '=', product.id)
      .execute();
  }
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('clients').dropColumn('self_signup').execute();
}
