// EU VAT (issue 26 items 1 and 2): `vat_checks` holds, per client, the last answer VIES gave for the client's VAT
// number (valid or invalid, its consultation number and date, the name and address it returned) or that a check is
// pending (VIES was down: the outbox retries it); `vat_rates` the member states' standard rates, shipped here as data
// (lib/eu-vat.ts, 1 January 2026) and edited by staff (admin/vat/rate_update).
import { withId, type AnyDb } from './helpers.ts';
import { EU_STANDARD_RATES } from '../../lib/eu-vat.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('vat_checks'))
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('vat_number', 'varchar(64)', (col) => col.notNull())
    .addColumn('country', 'varchar(2)', (col) => col.notNull())
    // pending | valid | invalid
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('consultation_number', 'varchar(64)')
    .addColumn('checked_at', 'varchar(32)')
    .addColumn('name', 'varchar(255)')
    .addColumn('address', 'varchar(1000)')
    .addColumn('last_error', 'varchar(255)')
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('vat_checks_client').on('vat_checks').column('client_id').unique().execute();

  await withId(db, db.schema.createTable('vat_rates'))
    .addColumn('country', 'varchar(2)', (col) => col.notNull())
    // Thousandths of a percent, as tax rules.
    .addColumn('rate', 'integer', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('vat_rates_country').on('vat_rates').column('country').unique().execute();
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  await db
    .insertInto('vat_rates')
    .values(Object.entries(EU_STANDARD_RATES).map(([country, rate]) => ({ country, rate, updated_at: now })))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('vat_rates').execute();
  await db.schema.dropTable('vat_checks').execute();
}
