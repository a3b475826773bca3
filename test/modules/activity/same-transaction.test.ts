// The audit entry and the change it records commit or roll back together (issue 25, "Bad input and safety"); the log
// is append-only (triggers), pruned by the scheduler past the retention setting; the scheduler's suspensions are the
// system's entries; concurrent changes each get their entry.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { makeProduct } from '../../helpers/selling-fixtures.ts';
import { inActionTransaction, outsideAction } from '../../../src/db/ambient.ts';
import { afterTransaction, inTransaction } from '../../../src/platform/transaction.ts';
import { isoSeconds } from '../../../src/lib/time.ts';

const DAY = 86_400_000;

describe('audit entries commit with their change', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const count = async (): Promise<number> => Number((await t.services.db.selectFrom('activity_log').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const setting = async (name: string): Promise<string | undefined> =>
    (await t.services.db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst())?.value;

  it('a failure after the change rolls back the change and leaves no entry', async () => {
    const before = await count();
    const { mail } = t.services;
    const original = mail.releaseWaiting.bind(mail);
    // settings_update saves the settings, then releases the mail that waited for a server: that second step fails.
    mail.releaseWaiting = () => Promise.reject(new Error('injected after the change'));
    try {
      const reply = await t.admin('system/settings_update', { company_name: 'Never saved', smtp_url: 'smtp://user:pass@mail.example.com:587' });
      expect(reply.status).toBe(500);
    } finally {
      mail.releaseWaiting = original;
    }
    expect(await setting('company_name')).not.toBe('Never saved');
    expect(await setting('smtp_url')).toBeUndefined();
    expect(await count()).toBe(before);
  });

  it('a failure writing the entry rolls back the change', async () => {
    const id = await makeProduct(t, { title: 'Kept title' });
    const before = await count();
    const { db, dialect } = t.services;
    if (dialect === 'postgres') {
      await sql`create function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'injected: no audit'; end $$`.execute(db);
      await sql`create trigger refuse_audit before insert on activity_log for each row execute function refuse_audit()`.execute(db);
    } else {
      await sql`create trigger refuse_audit before insert on activity_log begin select raise(abort, 'injected: no audit'); end`.execute(db);
    }
    try {
      const reply = await t.admin('product/update', { id, title: 'Changed title' });
      expect(reply.status).toBe(500);
      expect(JSON.stringify(reply.body)).not.toContain('injected');
    } finally {
      await sql`drop trigger refuse_audit${dialect === 'postgres' ? sql` on activity_log` : sql``}`.execute(db);
      if (dialect === 'postgres') await sql`drop function refuse_audit()`.execute(db);
    }
    expect((await t.admin('product/get', { id })).result.title).toBe('Kept title');
    expect(await count()).toBe(before);
    // Once the entry can be written again, the same change goes through with it.
    expect((await t.admin('product/update', { id, title: 'Changed title' })).body.error).toBeNull();
    expect(await count()).toBe(before + 1);
  });

  it('a refused change (4xx) leaves no entry and no change', async () => {
    const before = await count();
    const reply = await t.admin('product/update', { id: 2_000_000_000, title: 'Nobody' });
    expect(reply.status).toBe(404);
    expect((await t.admin('client/update', { id: 'x' })).status).toBe(422);
    expect((await t.admin('system/settings_update', { audit_retention_days: 'soon' })).status).toBe(422);
    expect(await count()).toBe(before);
  });

  it('the log refuses UPDATE and DELETE; only the retention pruning deletes', async () => {
    await t.admin('system/settings_update', { company_city: 'Append' });
    const { db } = t.services;
    await expect(db.updateTable('activity_log').set({ message: 'rewritten' }).execute()).rejects.toThrow(/append-only/);
    await expect(db.deleteFrom('activity_log').execute()).rejects.toThrow(/append-only/);
    const recent = await count();
    expect(recent).toBeGreaterThan(0);
    // Inserting is how entries are written; an old one is what the pruning removes.
    const old = isoSeconds(new Date(Date.now() - 800 * DAY));
    await db.insertInto('activity_log').values({ created_at: old, priority: 6, actor_type: 'system', staff_id: null, staff_name: null, staff_email: null, ip: null, action: 'system/test/old', target_type: null, target_id: null, changes: '[]', message: 'old' }).execute();
    const report = await t.services.cron.run(new Date());
    expect(report.audit_entries_pruned).toBe(1);
    expect(await count()).toBe(recent);
    // The mark that lets the pruning through is gone with its transaction.
    await expect(db.deleteFrom('activity_log').execute()).rejects.toThrow(/append-only/);
  });

  it('the retention follows audit_retention_days', async () => {
    const { db } = t.services;
    const tenDaysAgo = isoSeconds(new Date(Date.now() - 10 * DAY));
    await db.insertInto('activity_log').values({ created_at: tenDaysAgo, priority: 6, actor_type: 'system', staff_id: null, staff_name: null, staff_email: null, ip: null, action: 'system/test/ten_days', target_type: null, target_id: null, changes: '[]', message: 'ten days' }).execute();
    expect((await t.services.cron.run(new Date())).audit_entries_pruned).toBe(0);
    expect((await t.admin('system/settings_update', { audit_retention_days: 7 })).body.error).toBeNull();
    expect((await t.admin('system/settings_get')).result.audit_retention_days).toBe(7);
    expect((await t.services.cron.run(new Date())).audit_entries_pruned).toBe(1);
    expect((await t.admin('system/settings_update', { audit_retention_days: 0 })).status).toBe(422);
    expect((await t.admin('system/settings_update', { audit_retention_days: 730 })).body.error).toBeNull();
  });

  it('a write kept by outsideAction survives the rollback of the action around it, and waits for no connection', async () => {
    const { db } = t.services;
    const put = (name: string, value: string) => () =>
      db.insertInto('settings').values({ name, value, updated_at: isoSeconds(new Date()) }).onConflict((oc) => oc.column('name').doUpdateSet({ value })).execute();
    // On SQLite the action holds the only connection: a write beside it would wait for it forever; this one waits
    // for the action's end and is written before the caller hears the failure.
    await expect(
      inActionTransaction(db as never, async () => {
        await put('test_inside_action', 'rolled back')();
        await outsideAction(db as never, put('test_outside_action', 'counted'));
        throw new Error('refused after counting');
      }),
    ).rejects.toThrow('refused after counting');
    expect(await setting('test_outside_action')).toBe('counted');
    expect(await setting('test_inside_action')).toBeUndefined();
    // After a commit too; and outside an action it is written at once.
    await inActionTransaction(db as never, () => outsideAction(db as never, put('test_outside_action', 'after commit')));
    expect(await setting('test_outside_action')).toBe('after commit');
    await outsideAction(db as never, put('test_outside_action', 'at once'));
    expect(await setting('test_outside_action')).toBe('at once');
    await db.deleteFrom('settings').where('name', '=', 'test_outside_action').execute();
  });

  it('concurrent changes each commit with their own entry', async () => {
    const clients = await Promise.all([1, 2, 3].map(() => t.createClient()));
    const before = await count();
    const replies = await Promise.all([
      ...clients.map((client, i) => t.admin('client/update', { id: client.id, company: `Co ${i}` })),
      t.admin('client/update', { id: clients[0]!.id, first_name: 'Again' }),
      t.admin('product/prepare', { title: 'Concurrent', type: 'custom' }),
    ]);
    for (const reply of replies) expect(reply.body.error).toBeNull();
    expect(await count()).toBe(before + 5);
  });

  it('scheduled suspensions and cancellations are the system\'s entries', async () => {
    const product = await makeProduct(t);
    const client = await t.createClient();
    const id = (await t.admin('order/create', { client_id: client.id, product_id: product, period: '1M', activate: true })).result as number;
    const expires = Date.parse((await t.admin('order/get', { id })).result.expires_at as string);
    await t.services.cron.run(new Date(expires + 1000));
    const list = (await t.admin('activity/log_get_list', { actor_type: 'system', target_type: 'order', target_id: String(id) })).result.list;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ action: 'system/order/suspend', actor_type: 'system', admin_id: null, staff: null, changes: [{ field: 'status', from: 'active', to: 'suspended' }] });
    expect(list[0].message).toContain('Non-payment');
  });
});

describe('the action transaction (db/ambient.ts)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('a service transaction inside it is a savepoint; what waits for its commit waits for the action\'s', async () => {
    const { db } = t.services;
    const seen: string[] = [];
    await inActionTransaction(db as never, async () => {
      await inTransaction(db, async (trx) => {
        await trx.insertInto('cron_status').values({ id: 7, last_run_at: '2026-01-01T00:00:00Z' }).execute();
        afterTransaction(trx, (committed) => seen.push(`inner ${committed}`));
      });
      // A failed inner transaction rolls back to its savepoint; the action goes on.
      await expect(
        inTransaction(db, async (trx) => {
          await trx.insertInto('cron_status').values({ id: 8, last_run_at: '2026-01-01T00:00:00Z' }).execute();
          throw new Error('inner failure');
        }),
      ).rejects.toThrow('inner failure');
      afterTransaction(db, (committed) => seen.push(`plain ${committed}`));
      seen.push('action body done');
    });
    expect(seen).toEqual(['action body done', 'inner true', 'plain true']);
    const ids = (await db.selectFrom('cron_status').select('id').where('id', 'in', [7, 8]).execute()).map((row) => row.id);
    expect(ids).toEqual([7]);
    await db.deleteFrom('cron_status').where('id', '=', 7).execute();
  });

  it('a throw rolls back everything, and callbacks hear it', async () => {
    const { db } = t.services;
    const seen: boolean[] = [];
    await expect(
      inActionTransaction(db as never, async () => {
        await db.insertInto('cron_status').values({ id: 9, last_run_at: '2026-01-01T00:00:00Z' }).execute();
        await inTransaction(db, async (trx) => {
          await trx.insertInto('cron_status').values({ id: 10, last_run_at: '2026-01-01T00:00:00Z' }).execute();
          afterTransaction(trx, (committed) => seen.push(committed));
        });
        throw new Error('after the change');
      }),
    ).rejects.toThrow('after the change');
    expect(seen).toEqual([false]);
    expect(await db.selectFrom('cron_status').select('id').where('id', 'in', [9, 10]).execute()).toEqual([]);
  });

  it('a failed plain statement does not spoil the action\'s transaction (PostgreSQL aborts a transaction otherwise)', async () => {
    const { db } = t.services;
    await inActionTransaction(db as never, async () => {
      await db.insertInto('cron_status').values({ id: 11, last_run_at: '2026-01-01T00:00:00Z' }).execute();
      await expect(db.insertInto('cron_status').values({ id: 11, last_run_at: '2026-01-01T00:00:00Z' }).execute()).rejects.toThrow();
      await db.insertInto('cron_status').values({ id: 12, last_run_at: '2026-01-01T00:00:00Z' }).execute();
    });
    expect((await db.selectFrom('cron_status').select('id').where('id', 'in', [11, 12]).orderBy('id').execute()).map((r) => r.id)).toEqual([11, 12]);
    await db.deleteFrom('cron_status').where('id', 'in', [11, 12]).execute();
  });
});
