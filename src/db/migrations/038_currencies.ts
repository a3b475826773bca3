// Several currencies (issue 26): the instance's currencies (FOSSBilling's `currency` table, plus a price rounding for
// converted prices) and every rate staff have set, with its moment, so an invoice can name the rate it used. The
// default currency is written at start-up from the CURRENCY setting (CurrencyService.seedDefault), not here: a
// migration is frozen in time and does not read the configuration.
import { sql } from 'kysely';
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('currencies'))
    .addColumn('code', 'varchar(3)', (col) => col.notNull())
    .addColumn('is_default', 'integer', (col) => col.notNull().defaultTo(0))
    // The canonical decimal string ("0.92"): units of this currency per unit of the default one; exact, never a float.
    .addColumn('conversion_rate', 'varchar(32)', (col) => col.notNull())
    .addColumn('is_rate_manual', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('format_pattern', 'varchar(100)')
    .addColumn('fraction_digits', 'integer')
    // Converted prices end in `rounding_ending` above a multiple of `rounding_step` (minor units); both null: none.
    .addColumn('rounding_step', 'bigint')
    .addColumn('rounding_ending', 'bigint')
    .addColumn('rate_updated_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('currencies_code').on('currencies').column('code').unique().execute();
  // At most one default, whatever two staff members do at once.
  await db.schema.createIndex('currencies_one_default').on('currencies').column('is_default').unique().where(sql.ref('is_default'), '=', 1).execute();

  await withId(db, db.schema.createTable('currency_rates'))
    .addColumn('code', 'varchar(3)', (col) => col.notNull())
    .addColumn('rate', 'varchar(32)', (col) => col.notNull())
    // The default currency this rate was against (a rate means nothing without it).
    .addColumn('base_code', 'varchar(3)', (col) => col.notNull())
    .addColumn('staff_id', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('currency_rates_code').on('currency_rates').columns(['code', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('currency_rates').execute();
  await db.schema.dropTable('currencies').execute();
}
