// The outbox itself, with a test kind: written in the caller's transaction (nothing when it rolls back), delivered
// once, retried on the kind's schedule and then `failed`, set aside as `not_sent`, deduplicated, taken over after a
// claim's lease ran out, and never delivered twice by two senders working on one database at the same time.
// Runs on SQLite and, with TEST_DATABASE_URL, on PostgreSQL.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrap } from '../../../src/bootstrap.ts';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { OutboxGiveUp, OutboxNotSent, type OutboxContext } from '../../../src/modules/outbox/service.ts';
import type { Services } from '../../../src/services.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';

const MINUTE = 60_000;

let t: TestApp;
const calls: Array<{ kind: string; payload: unknown; context: OutboxContext }> = [];
/** What the `flaky` kind does on its next call. */
let flakyBehaviour: (context: OutboxContext) => Promise<void> = async () => {};

beforeAll(async () => {
  t = await createTestApp();
  t.services.outbox.registerKind('test', {
    retryDelaysMs: [MINUTE, 5 * MINUTE],
    async deliver(payload, context) {
      calls.push({ kind: 'test', payload, context });
    },
  });
  t.services.outbox.registerKind('flaky', {
    retryDelaysMs: [MINUTE, 5 * MINUTE, 30 * MINUTE],
    async deliver(payload, context) {
      calls.push({ kind: 'flaky', payload, context });
      await flakyBehaviour(context);
    },
  });
});

afterAll(async () => {
  await t.close();
});

async function item(id: number) {
  return t.services.db.selectFrom('outbox_messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe('outbox', () => {
  it('writes the item in the caller’s transaction: nothing when it rolls back, delivered once when it commits', async () => {
    calls.length = 0;
    const { db, outbox } = t.services;
    await expect(
      inTransaction(db, async (trx) => {
        await outbox.enqueue(trx, { kind: 'test', payload: { n: 'rolled back' } });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    const id = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'test', payload: { n: 1 } }));
    expect((await db.selectFrom('outbox_messages').select('payload').execute()).map((row) => row.payload)).toEqual(['{"n":1}']);

    expect(await outbox.runDue()).toBe(1);
    expect(calls).toEqual([{ kind: 'test', payload: { n: 1 }, context: { id, attempt: 1 } }]);
    expect(await outbox.runDue()).toBe(0);
    expect(calls).toHaveLength(1);
    const row = await item(id);
    expect(row).toMatchObject({ status: 'sent', attempts: 1, claim_token: null, claimed_until: null, last_error: null });
    expect(row.done_at).not.toBeNull();
    expect(await outbox.attempts(id)).toEqual([expect.objectContaining({ attempt: 1, outcome: 'sent', error: null })]);
  });

  it('waits for runAt', async () => {
    calls.length = 0;
    const { db, outbox } = t.services;
    const at = new Date(Date.now() + 10 * MINUTE);
    const id = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'test', payload: 'later', runAt: at }));
    expect(await outbox.runDue()).toBe(0);
    expect(await outbox.runDue(new Date(at.getTime() - 1))).toBe(0);
    expect(await outbox.runDue(at)).toBe(1);
    expect(calls.map((call) => call.context.id)).toEqual([id]);
  });

  it('retries after each delay of the kind’s schedule, then gives up as failed', async () => {
    calls.length = 0;
    flakyBehaviour = async (context) => {
      throw new Error(`refused on attempt ${context.attempt}\r\nsecond line`);
    };
    const { db, outbox } = t.services;
    const t0 = new Date(Date.now() + 3_600_000);
    const id = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'flaky', payload: null, runAt: t0 }));
    const at = (ms: number) => new Date(t0.getTime() + ms);

    expect(await outbox.runDue(t0)).toBe(1);
    expect(await item(id)).toMatchObject({ status: 'pending', attempts: 1, run_at: at(MINUTE).toISOString() });
    expect((await item(id)).last_error).toBe('refused on attempt 1 second line');
    expect(await outbox.runDue(at(MINUTE - 1))).toBe(0);
    expect(await outbox.runDue(at(MINUTE))).toBe(1);
    expect(await item(id)).toMatchObject({ status: 'pending', attempts: 2, run_at: at(MINUTE + 5 * MINUTE).toISOString() });
    expect(await outbox.runDue(at(6 * MINUTE))).toBe(1);
    expect(await item(id)).toMatchObject({ status: 'pending', attempts: 3, run_at: at(36 * MINUTE).toISOString() });
    expect(await outbox.runDue(at(36 * MINUTE))).toBe(1);
    const failed = await item(id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 4, last_error: 'refused on attempt 4 second line' });
    expect(await outbox.runDue(at(100 * 24 * 60 * MINUTE))).toBe(0);
    expect(calls.map((call) => call.context.attempt)).toEqual([1, 2, 3, 4]);
    expect((await outbox.attempts(id)).map((a) => a.outcome)).toEqual(['error', 'error', 'error', 'error']);
  });

  it('sets an item aside as not_sent (OutboxNotSent) or fails it at once (OutboxGiveUp), without retrying', async () => {
    const { db, outbox } = t.services;
    flakyBehaviour = async () => {
      throw new OutboxNotSent('no transport');
    };
    const notSent = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'flaky', payload: null }));
    await outbox.runDue();
    expect(await item(notSent)).toMatchObject({ status: 'not_sent', attempts: 1, last_error: 'no transport' });
    flakyBehaviour = async () => {
      throw new OutboxGiveUp('gone for good');
    };
    const gaveUp = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'flaky', payload: null }));
    await outbox.runDue();
    expect(await item(gaveUp)).toMatchObject({ status: 'failed', attempts: 1, last_error: 'gone for good' });
    expect(await outbox.runDue(new Date(Date.now() + 86_400_000))).toBe(0);
  });

  it('adds nothing for a dedupe key it has seen, even across transactions', async () => {
    const { db, outbox } = t.services;
    const first = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'test', payload: 1, dedupeKey: 'once:1' }));
    const again = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'test', payload: 2, dedupeKey: 'once:1' }));
    expect(again).toBe(first);
    expect(await db.selectFrom('outbox_messages').select('id').where('dedupe_key', '=', 'once:1').execute()).toHaveLength(1);
    expect(await inTransaction(db, (trx) => outbox.hasDedupeKey(trx, 'once:1'))).toBe(true);
    expect(await inTransaction(db, (trx) => outbox.hasDedupeKey(trx, 'once:2'))).toBe(false);
    await outbox.runDue();
  });

  it('leaves kinds it has no handler for to the processes that have one', async () => {
    const { db, outbox } = t.services;
    const id = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'webhook-of-a-newer-version', payload: {} }));
    expect(await outbox.runDue()).toBe(0);
    expect(await item(id)).toMatchObject({ status: 'pending', attempts: 0, claim_token: null });
    await db.deleteFrom('outbox_messages').where('id', '=', id).execute();
  });

  it('takes over an item whose claim’s lease ran out (a sender that died mid-delivery), and the late sender changes nothing', async () => {
    calls.length = 0;
    const { db, outbox } = t.services;
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => {
      release = resolve;
    });
    let first = true;
    flakyBehaviour = async () => {
      if (first) {
        first = false;
        await stuck;
        throw new Error('the first sender finally failed');
      }
    };
    const id = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'flaky', payload: 'x' }));
    const hanging = outbox.runDue();
    while (calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const claimed = await item(id);
    expect(claimed.claim_token).not.toBeNull();
    // Within the lease nobody else takes it; after it, another round does.
    expect(await outbox.runDue(new Date(Date.now() + 60_000))).toBe(0);
    expect(await outbox.runDue(new Date(Date.parse(claimed.claimed_until!) + 1))).toBe(1);
    expect(await item(id)).toMatchObject({ status: 'sent', attempts: 2, claim_token: null });
    release();
    await hanging;
    // The first sender's late failure lost its claim: the item stays sent; its attempt is still on record.
    expect(await item(id)).toMatchObject({ status: 'sent', attempts: 2 });
    expect((await outbox.attempts(id)).map((a) => [a.attempt, a.outcome])).toEqual(
      expect.arrayContaining([
        [2, 'sent'],
        [1, 'error'],
      ]),
    );
    expect(calls.map((call) => call.context.attempt)).toEqual([1, 2]);
  });

  it('runs as a loop: woken by a commit, it delivers without being asked; stopping waits for the delivery in progress', async () => {
    calls.length = 0;
    const { db, outbox } = t.services;
    let finish!: () => void;
    const slow = new Promise<void>((resolve) => {
      finish = resolve;
    });
    flakyBehaviour = () => slow;
    outbox.start();
    const id = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'flaky', payload: 'woken' }));
    // More than one batch behind it: stopping must not wait for those.
    const queued = await inTransaction(db, async (trx) => {
      const ids: number[] = [];
      for (let n = 0; n < 25; n++) ids.push(await outbox.enqueue(trx, { kind: 'test', payload: n }));
      return ids;
    });
    // No poll has run yet (5 s): the commit itself woke the sender.
    while (calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(calls[0]!.context.id).toBe(id);
    let stopped = false;
    const stopping = outbox.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);
    finish();
    await stopping;
    expect(await item(id)).toMatchObject({ status: 'sent', attempts: 1, claim_token: null });
    const left = await db.selectFrom('outbox_messages').select('id').where('id', 'in', queued).where('status', '=', 'pending').execute();
    expect(left.length).toBeGreaterThan(0);
    // Stopped for good: a later commit wakes nothing (tests below drive runDue themselves).
    const later = await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: 'test', payload: 'after stop' }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await item(later)).status).toBe('pending');
    await outbox.runDue();
  });

  it('counts items per kind and status', async () => {
    const counts = await t.services.outbox.counts();
    expect(counts).toEqual(expect.arrayContaining([{ kind: 'test', status: 'sent', count: expect.any(Number) }, { kind: 'flaky', status: 'failed', count: 2 }]));
  });
});

describe('two senders on one database', () => {
  let a: TestApp;
  let b: Services;
  const file = `/tmp/tollgate-outbox-${process.pid}-${Date.now()}.db`;

  beforeAll(async () => {
    // On SQLite two senders need a database file both can open; on PostgreSQL the test database is shared anyway.
    a = await createTestApp(process.env.TEST_DATABASE_URL ? {} : { DATABASE_URL: `sqlite:${file}` });
    b = await bootstrap(a.services.config);
  });

  afterAll(async () => {
    await b.close();
    await a.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
  });

  it('never delivers one item twice when both run at the same time', async () => {
    const delivered: Array<{ sender: string; id: number }> = [];
    const busy = { a: 0, b: 0 };
    let mostAtOnce = 0;
    const handler = (sender: 'a' | 'b') => ({
      retryDelaysMs: [MINUTE],
      async deliver(_payload: unknown, { id }: OutboxContext) {
        delivered.push({ sender, id });
        busy[sender] += 1;
        mostAtOnce = Math.max(mostAtOnce, busy[sender]);
        // An await inside the delivery, as a real SMTP conversation has, lets the other sender claim meanwhile.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
        busy[sender] -= 1;
      },
    });
    a.services.outbox.registerKind('race', handler('a'));
    b.outbox.registerKind('race', handler('b'));
    const ids = await inTransaction(a.services.db, async (trx) => {
      const out: number[] = [];
      for (let n = 0; n < 200; n++) out.push(await a.services.outbox.enqueue(trx, { kind: 'race', payload: n }));
      return out;
    });
    const [countA, countB] = await Promise.all([a.services.outbox.runDue(), b.outbox.runDue()]);
    expect(countA + countB).toBe(200);
    // A round claims at most one batch (10 items): a claim that took more would leave items on the wire at a crash.
    expect(mostAtOnce).toBeLessThanOrEqual(10);
    expect(delivered.map((d) => d.id).toSorted((x, y) => x - y)).toEqual(ids);
    // Both really worked (otherwise this proves nothing about claiming).
    expect(new Set(delivered.map((d) => d.sender))).toEqual(new Set(['a', 'b']));
    const statuses = await a.services.db.selectFrom('outbox_messages').select('status').where('kind', '=', 'race').execute();
    expect(statuses.every((row) => row.status === 'sent')).toBe(true);
  });
});
