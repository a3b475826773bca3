// admin/usage/ingest (issue 23, item 2): events in, exactly once per order and event id, whatever the batch splits,
// retries or concurrency. Runs on SQLite, and on PostgreSQL (+ Redis) when TEST_DATABASE_URL / TEST_REDIS_URL are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { ingest, meteredOrder, minutesFromNow, storedEvents } from './helpers.ts';

describe('admin/usage/ingest: exactly once', () => {
  let t: TestApp;
  let clientId: number;

  beforeAll(async () => {
    t = await createTestApp();
    clientId = (await t.createClient()).id;
  });
  afterAll(async () => {
    await t.close();
  });

  it('stores each sound event once, by key or by order_id, with its value, timestamp and properties', async () => {
    const { orderId, key } = await meteredOrder(t, clientId);
    const at = minutesFromNow(-60);
    const answer = await ingest(t, [
      { id: 'e1', key, meter: 'tokens', value: 1500, timestamp: at, properties: { model: 'large' } },
      { id: 'e2', order_id: orderId, meter: 'requests' },
      { id: 'e3', key, meter: 'users', properties: { user: 'u-1' } },
      { id: 'e4', order_id: orderId, meter: 'calls' },
    ]);
    expect(answer).toEqual({ accepted: 4, duplicates: 0, rejected: [] });
    const rows = await storedEvents(t, orderId);
    expect(rows.map((row) => [row.event_id, row.meter, row.value])).toEqual([
      ['e1', 'tokens', 1500],
      ['e2', 'requests', null],
      ['e3', 'users', null],
      ['e4', 'calls', null],
    ]);
    expect(rows[0]?.timestamp).toBe(at);
    expect(JSON.parse(rows[0]?.properties ?? 'null')).toEqual({ model: 'large' });
    expect(rows[1]?.properties).toBeNull();
    // No timestamp: the moment it arrived.
    expect(Math.abs(Date.parse(rows[1]?.timestamp ?? '') - Date.now())).toBeLessThan(60_000);
  });

  it('a timestamp with an offset is stored as the same instant in UTC; a fractional value is refused (whole numbers only)', async () => {
    const { orderId } = await meteredOrder(t, clientId);
    const instant = new Date(Date.now() - 3 * 3600_000);
    instant.setUTCMilliseconds(0);
    const local = new Date(instant.getTime() + 2 * 3600_000).toISOString().replace(/\.\d{3}Z$/, '+02:00');
    expect(await ingest(t, [{ id: 'tz', order_id: orderId, meter: 'tokens', value: 25, timestamp: local }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    const [row] = await storedEvents(t, orderId);
    expect(row?.timestamp).toBe(instant.toISOString());
    expect(Number(row?.value)).toBe(25);
    const fractional = await ingest(t, [{ id: 'half', order_id: orderId, meter: 'tokens', value: 0.25 }]);
    expect(fractional.rejected).toEqual([{ index: 0, code: 'INVALID_VALUE', message: expect.stringContaining('whole number') }]);
  });

  it('an id repeated within a batch is stored once (the first wins) and reported as a duplicate', async () => {
    const { orderId, key } = await meteredOrder(t, clientId);
    const answer = await ingest(t, [
      { id: 'same', order_id: orderId, meter: 'tokens', value: 10 },
      { id: 'same', key, meter: 'tokens', value: 99 },
      { id: 'other', order_id: orderId, meter: 'tokens', value: 5 },
    ]);
    expect(answer).toEqual({ accepted: 2, duplicates: 1, rejected: [] });
    const rows = await storedEvents(t, orderId);
    expect(rows.map((row) => [row.event_id, Number(row.value)])).toEqual([
      ['other', 5],
      ['same', 10],
    ]);
  });

  it('an id already stored is a duplicate in a later batch (a retry), and adds nothing', async () => {
    const { orderId } = await meteredOrder(t, clientId);
    const batch = [1, 2, 3].map((n) => ({ id: `r${n}`, order_id: orderId, meter: 'tokens', value: n }));
    expect(await ingest(t, batch)).toEqual({ accepted: 3, duplicates: 0, rejected: [] });
    expect(await ingest(t, batch)).toEqual({ accepted: 0, duplicates: 3, rejected: [] });
    expect(await ingest(t, [...batch.slice(1), { id: 'r4', order_id: orderId, meter: 'tokens', value: 4 }])).toEqual({ accepted: 1, duplicates: 2, rejected: [] });
    expect((await storedEvents(t, orderId)).map((row) => row.event_id)).toEqual(['r1', 'r2', 'r3', 'r4']);
  });

  it('ids are unique per order: the same id on two orders is two events', async () => {
    const first = await meteredOrder(t, clientId);
    const second = await meteredOrder(t, clientId);
    const answer = await ingest(t, [
      { id: 'shared', order_id: first.orderId, meter: 'requests' },
      { id: 'shared', order_id: second.orderId, meter: 'requests' },
    ]);
    expect(answer).toEqual({ accepted: 2, duplicates: 0, rejected: [] });
    expect(await storedEvents(t, first.orderId)).toHaveLength(1);
    expect(await storedEvents(t, second.orderId)).toHaveLength(1);
  });

  it('the same 2,000 events sent twice, in different splits and concurrently, are each stored once', async () => {
    const { orderId, key } = await meteredOrder(t, clientId);
    // Half name the order by key, half by id: both roads meet at the same unique (order_id, event_id).
    const events = Array.from({ length: 2000 }, (_, n) =>
      n % 2 === 0 ? { id: `c-${n}`, key, meter: 'tokens', value: n } : { id: `c-${n}`, order_id: orderId, meter: 'tokens', value: n },
    );
    const split = (list: typeof events, size: number) => Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size));
    // The second copy is reversed and cut differently, so batches overlap each other in several places at once.
    const batches = [...split(events, 1000), ...split(events.toReversed(), 250), ...split(events.slice(500), 300)];
    const answers = await Promise.all(batches.map((batch) => ingest(t, batch)));
    const accepted = answers.reduce((sum, answer) => sum + answer.accepted, 0);
    const duplicates = answers.reduce((sum, answer) => sum + answer.duplicates, 0);
    const sent = batches.reduce((sum, batch) => sum + batch.length, 0);
    expect(answers.flatMap((answer) => answer.rejected)).toEqual([]);
    expect(accepted).toBe(2000);
    expect(duplicates).toBe(sent - 2000);
    const rows = await storedEvents(t, orderId);
    expect(rows).toHaveLength(2000);
    expect(rows.reduce((sum, row) => sum + Number(row.value), 0)).toBe((1999 * 2000) / 2);
  });

  it('the database itself holds one row per (order_id, event_id): a second plain insert fails (migration 026)', async () => {
    const { orderId } = await meteredOrder(t, clientId);
    const row = { order_id: orderId, event_id: 'raw', meter: 'calls', value: null, timestamp: new Date().toISOString(), properties: null, received_at: new Date().toISOString() };
    await t.services.db.insertInto('usage_events').values(row).execute();
    await expect(t.services.db.insertInto('usage_events').values(row).execute()).rejects.toThrow(/unique|duplicate/i);
    expect(await ingest(t, [{ id: 'raw', order_id: orderId, meter: 'calls' }])).toEqual({ accepted: 0, duplicates: 1, rejected: [] });
  });

  it('an empty batch answers zeros', async () => {
    expect(await ingest(t, [])).toEqual({ accepted: 0, duplicates: 0, rejected: [] });
  });
});

describe('admin/usage/ingest: batches sharing events in opposite orders', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  // On PostgreSQL two transactions inserting the same keys in opposite orders each wait for a row lock the other holds
  // (a deadlock, answered 500) unless every batch inserts in one order: the service sorts by (order_id, event_id).
  it('the same 1,000 events sent forwards and backwards at once, five times over, never fail and are stored once', async () => {
    const { orderId } = await meteredOrder(t, (await t.createClient()).id);
    for (let round = 0; round < 5; round++) {
      const events = Array.from({ length: 1000 }, (_, n) => ({ id: `o${round}-${String(n).padStart(4, '0')}`, order_id: orderId, meter: 'requests' }));
      const answers = await Promise.all([events, events.toReversed(), events, events.toReversed()].map((batch) => t.admin('usage/ingest', { events: batch })));
      expect(answers.map((reply) => reply.status)).toEqual([200, 200, 200, 200]);
      expect(answers.reduce((sum, reply) => sum + (reply.result.accepted as number), 0)).toBe(1000);
    }
    expect(await storedEvents(t, orderId)).toHaveLength(5000);
  });
});
