// The FOSSBilling import (docs/moving-from-fossbilling.md, src/import/fossbilling/): which Tollgate record each
// imported FOSSBilling record became, so that running the import again updates those records instead of creating
// them twice. `fingerprint` is a keyed hash of what the import wrote from the FOSSBilling row: an unchanged row is
// left alone, a changed one is written again.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('fossbilling_ids')
    // staff_group, staff, client, tax, product, order, apikey, invoice, transaction
    .addColumn('kind', 'varchar(20)', (col) => col.notNull())
    .addColumn('fb_id', 'bigint', (col) => col.notNull())
    .addColumn('tollgate_id', 'integer', (col) => col.notNull())
    .addColumn('fingerprint', 'varchar(64)', (col) => col.notNull())
    .addColumn('imported_at', 'varchar(32)', (col) => col.notNull())
    .addPrimaryKeyConstraint('fossbilling_ids_pk', ['kind', 'fb_id'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('fossbilling_ids').execute();
}
