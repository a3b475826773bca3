// Key analytics (issue 25): lookups of unknown keys, counted per caller address and time bucket; an unknown key has
// no key to count against. The primary key leads with (unit, at): the range reads and the retention prune use it.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('api_key_not_found')
    .addColumn('ip', 'varchar(45)', (col) => col.notNull())
    .addColumn('unit', 'varchar(6)', (col) => col.notNull())
    .addColumn('at', 'varchar(20)', (col) => col.notNull())
    .addColumn('count', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('api_key_not_found_pk', ['unit', 'at', 'ip'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('api_key_not_found').execute();
}
