// Plan changes and renewals that cannot be paid for the wrong plan (issue 20: H1, M1, M2, M8). Each invoice line that
// buys service now says what it buys, so a payment can be checked against the order as it is when it arrives:
// - `product_id` (from 006, until now only on 'change' lines) is also written on 'renew' lines: the plan renewed onto;
// - `credit`: on a 'change' line, the unused part of the current period taken off the new plan's price;
// - `priced_until`: on a 'change' line, the end of the period its credit was computed for; the scheduler voids the
//   invoice then, and a payment arriving after it is never applied;
// - `covers_until`: on an executed 'renew' or 'change' line, the order's expiry it bought, so a later plan change
//   credits what was actually paid for the current period (and nothing for a period granted without payment).
import { sql } from 'kysely';
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('invoice_items').addColumn('credit', 'bigint', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('invoice_items').addColumn('priced_until', 'varchar(32)').execute();
  await db.schema.alterTable('invoice_items').addColumn('covers_until', 'varchar(32)').execute();

  // Unpaid lines issued before this migration. A renewal renews the plan its price and period match (a waiting
  // downgrade first); one matching neither stays without a plan and is refused at payment. A plan change was priced
  // against the order's current expiry.
  await sql`
    UPDATE invoice_items SET product_id = (
      SELECT CASE
        WHEN o.next_product_id IS NOT NULL AND o.next_period = invoice_items.period AND o.next_price = invoice_items.price THEN o.next_product_id
        WHEN o.next_product_id IS NULL AND o.period = invoice_items.period AND o.price = invoice_items.price THEN o.product_id
        ELSE NULL END
      FROM orders o WHERE o.id = invoice_items.order_id)
    WHERE task = 'renew' AND product_id IS NULL AND executed = 0
      AND invoice_id IN (SELECT id FROM invoices WHERE status = 'unpaid')`.execute(db);
  await sql`
    UPDATE invoice_items SET priced_until = (SELECT o.expires_at FROM orders o WHERE o.id = invoice_items.order_id)
    WHERE task = 'change' AND executed = 0 AND invoice_id IN (SELECT id FROM invoices WHERE status = 'unpaid')`.execute(db);
  // The newest paid renewal or plan change of each order is taken to have bought its current period: the best guess
  // the old rows allow (a staff renewal since then cannot be told apart). From now on each line records it exactly.
  await sql`
    UPDATE invoice_items SET covers_until = (SELECT o.expires_at FROM orders o WHERE o.id = invoice_items.order_id)
    WHERE id IN (
      SELECT max(ii.id) FROM invoice_items ii INNER JOIN invoices i ON i.id = ii.invoice_id
      WHERE ii.executed = 1 AND ii.task IN ('renew', 'change') AND ii.order_id IS NOT NULL AND i.status IN ('paid', 'refunded')
      GROUP BY ii.order_id)`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  for (const column of ['credit', 'priced_until', 'covers_until']) await db.schema.alterTable('invoice_items').dropColumn(column).execute();
}
