// admin/usage/ingest refuses a bad event alone (issue 23, "bad input"): each rejection names the event's index and a
// code, and the batch's other events are stored. A malformed request as a whole is the usual 422 naming the field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { buyKey, createPlan } from '../../helpers/apikey.ts';
import { ingest, meteredOrder, minutesFromNow, storedEvents } from './helpers.ts';

/** A property bag nested `depth` levels deep (the bag itself is level 1). */
function nested(depth: number): Record<string, unknown> {
  let bag: Record<string, unknown> = { leaf: true };
  for (let level = 1; level < depth; level++) bag = { inner: bag };
  return bag;
}

describe('admin/usage/ingest: rejections', () => {
  let t: TestApp;
  let clientId: number;
  let orderId: number;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    clientId = (await t.createClient()).id;
    ({ orderId, key } = await meteredOrder(t, clientId));
  });
  afterAll(async () => {
    await t.close();
  });

  /** Sends one bad event between two good ones: the bad one is rejected with `code`, the good ones are stored. */
  async function rejectsAlone(label: string, bad: Record<string, unknown>, code: string, message?: RegExp): Promise<void> {
    const good = (n: number) => ({ id: `${label}-good-${n}`, order_id: orderId, meter: 'tokens', value: n });
    const answer = await ingest(t, [good(1), bad, good(2)]);
    expect(answer.accepted).toBe(2);
    expect(answer.duplicates).toBe(0);
    expect(answer.rejected).toEqual([{ index: 1, code, message: expect.any(String) }]);
    if (message !== undefined) expect(answer.rejected[0]?.message).toMatch(message);
    const ids = (await storedEvents(t, orderId)).map((row) => row.event_id);
    expect(ids).toEqual(expect.arrayContaining([`${label}-good-1`, `${label}-good-2`]));
    if (typeof bad.id === 'string') expect(ids).not.toContain(bad.id);
  }

  it('an id missing, empty, not a string or over 128 characters → INVALID_ID (128 is fine)', async () => {
    await rejectsAlone('id1', { order_id: orderId, meter: 'requests' }, 'INVALID_ID');
    await rejectsAlone('id2', { id: '', order_id: orderId, meter: 'requests' }, 'INVALID_ID');
    await rejectsAlone('id3', { id: 42, order_id: orderId, meter: 'requests' }, 'INVALID_ID');
    await rejectsAlone('id4', { id: 'x'.repeat(129), order_id: orderId, meter: 'requests' }, 'INVALID_ID', /128/);
    expect(await ingest(t, [{ id: 'y'.repeat(128), order_id: orderId, meter: 'requests' }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  });

  it('neither or both of key and order_id, or an order_id that is not a positive integer → INVALID_TARGET', async () => {
    await rejectsAlone('t1', { id: 't1', meter: 'requests' }, 'INVALID_TARGET');
    await rejectsAlone('t2', { id: 't2', key, order_id: orderId, meter: 'requests' }, 'INVALID_TARGET');
    await rejectsAlone('t3', { id: 't3', order_id: -4, meter: 'requests' }, 'INVALID_TARGET');
    await rejectsAlone('t4', { id: 't4', order_id: '12', meter: 'requests' }, 'INVALID_TARGET');
    await rejectsAlone('t5', { id: 't5', key: 7, meter: 'requests' }, 'INVALID_TARGET');
  });

  it('an unknown key → UNKNOWN_KEY; an unknown order → UNKNOWN_ORDER; a deleted key no longer names its order', async () => {
    await rejectsAlone('k1', { id: 'k1', key: 'NOT-A-REAL-KEY-0000', meter: 'requests' }, 'UNKNOWN_KEY');
    await rejectsAlone('o1', { id: 'o1', order_id: 987_654, meter: 'requests' }, 'UNKNOWN_ORDER');
    // A plan allowing two keys, so the first one can be deleted while the order lives on.
    const other = await buyKey(t, await createPlan(t, { max_keys: 2 }), clientId);
    expect((await t.admin('serviceapikey/create', { order_id: other.orderId, name: 'second' })).status).toBe(200);
    expect(await ingest(t, [{ id: 'k2-before', key: other.key, meter: 'calls' }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    expect((await t.admin('serviceapikey/delete', { id: other.keyId })).body).toEqual({ result: true, error: null });
    await rejectsAlone('k2', { id: 'k2', key: other.key, meter: 'calls' }, 'UNKNOWN_KEY');
  });

  it('a key replaced with a grace period names its order until the grace ends, then UNKNOWN_KEY', async () => {
    const rotated = await meteredOrder(t, clientId);
    const reset = await t.admin('serviceapikey/reset', { order_id: rotated.orderId, grace_seconds: 3600 });
    expect(reset.status).toBe(200);
    expect(await ingest(t, [{ id: 'g1', key: rotated.key, meter: 'requests' }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    // The grace has ended (set in the past rather than waited for).
    await t.services.db.updateTable('api_keys').set({ grace_until: new Date(Date.now() - 1000).toISOString() }).where('order_id', '=', rotated.orderId).execute();
    const answer = await ingest(t, [{ id: 'g2', key: rotated.key, meter: 'requests' }]);
    expect(answer.rejected.map((r) => r.code)).toEqual(['UNKNOWN_KEY']);
  });

  it("another client's order is fine for staff; an order whose client is suspended → CLIENT_INACTIVE", async () => {
    const someone = await t.createClient();
    const theirs = await meteredOrder(t, someone.id);
    expect(await ingest(t, [{ id: 'theirs', key: theirs.key, meter: 'requests' }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    expect((await t.admin('client/update', { id: someone.id, status: 'suspended' })).body).toEqual({ result: true, error: null });
    await rejectsAlone('s1', { id: 's1', order_id: theirs.orderId, meter: 'requests' }, 'CLIENT_INACTIVE');
    await rejectsAlone('s2', { id: 's2', key: theirs.key, meter: 'requests' }, 'CLIENT_INACTIVE');
    expect((await t.admin('client/update', { id: someone.id, status: 'active' })).body).toEqual({ result: true, error: null });
    expect(await ingest(t, [{ id: 's1', order_id: theirs.orderId, meter: 'requests' }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  });

  it('a meter not on the plan → UNKNOWN_METER; calls is always a meter; a plan without meters has only calls', async () => {
    await rejectsAlone('m1', { id: 'm1', order_id: orderId, meter: 'bytes', value: 3 }, 'UNKNOWN_METER', /bytes/);
    await rejectsAlone('m2', { id: 'm2', order_id: orderId, meter: 12 }, 'UNKNOWN_METER');
    const bare = await meteredOrder(t, clientId, null);
    const answer = await ingest(t, [
      { id: 'b1', order_id: bare.orderId, meter: 'calls' },
      { id: 'b2', order_id: bare.orderId, meter: 'tokens', value: 1 },
    ]);
    expect(answer).toEqual({ accepted: 1, duplicates: 0, rejected: [{ index: 1, code: 'UNKNOWN_METER', message: expect.any(String) }] });
  });

  it('meters in a key\'s options that the rules refuse (written by hand) leave the plan with calls alone, never a failure', async () => {
    const odd = await meteredOrder(t, clientId, [
      'tokens',
      { code: 'Bad Code', aggregation: 'sum' },
      { code: 'bytes', name: 'Bytes', unit: 'byte', aggregation: 'sum' },
    ]);
    const answer = await ingest(t, [
      { id: 'x1', order_id: odd.orderId, meter: 'bytes', value: 512 },
      { id: 'x4', order_id: odd.orderId, meter: 'calls', value: 3 },
      { id: 'x5', order_id: odd.orderId, meter: 'calls' },
    ]);
    expect(answer.accepted).toBe(1);
    expect(answer.rejected.map((r) => [r.index, r.code])).toEqual([
      [0, 'UNKNOWN_METER'],
      [1, 'VALUE_NOT_ALLOWED'],
    ]);
  });

  it('a negative, non-numeric or non-finite value → INVALID_VALUE; 0 is fine', async () => {
    await rejectsAlone('v1', { id: 'v1', order_id: orderId, meter: 'tokens', value: -1 }, 'INVALID_VALUE', /negative/);
    await rejectsAlone('v2', { id: 'v2', order_id: orderId, meter: 'tokens', value: '12' }, 'INVALID_VALUE');
    expect(await ingest(t, [{ id: 'v3', order_id: orderId, meter: 'tokens', value: 0 }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    // JSON has no Infinity, but 1e999 parses as one: sent raw, as a client would.
    const body = `{"events":[{"id":"inf-good","order_id":${orderId},"meter":"tokens","value":1},{"id":"inf","order_id":${orderId},"meter":"tokens","value":1e999}]}`;
    const reply = await t.call('/api/admin/usage/ingest', {}, { basic: ['admin', t.adminToken], raw: { body, contentType: 'application/json' } });
    expect(reply.status).toBe(200);
    expect(reply.result).toEqual({ accepted: 1, duplicates: 0, rejected: [{ index: 1, code: 'INVALID_VALUE', message: expect.stringMatching(/finite/) }] });
  });

  it('a value on a count meter → VALUE_NOT_ALLOWED; none on a sum, max or latest meter → VALUE_REQUIRED', async () => {
    await rejectsAlone('c1', { id: 'c1', order_id: orderId, meter: 'requests', value: 2 }, 'VALUE_NOT_ALLOWED');
    await rejectsAlone('c2', { id: 'c2', order_id: orderId, meter: 'calls', value: 1 }, 'VALUE_NOT_ALLOWED');
    for (const meter of ['tokens', 'peak', 'seats']) await rejectsAlone(`n-${meter}`, { id: `n-${meter}`, order_id: orderId, meter }, 'VALUE_REQUIRED');
  });

  it("a unique_count event without its property (or with an object there) → PROPERTY_REQUIRED", async () => {
    await rejectsAlone('u1', { id: 'u1', order_id: orderId, meter: 'users' }, 'PROPERTY_REQUIRED', /user/);
    await rejectsAlone('u2', { id: 'u2', order_id: orderId, meter: 'users', properties: { other: 'x' } }, 'PROPERTY_REQUIRED');
    await rejectsAlone('u3', { id: 'u3', order_id: orderId, meter: 'users', properties: { user: { id: 1 } } }, 'PROPERTY_REQUIRED');
    expect(await ingest(t, [{ id: 'u4', order_id: orderId, meter: 'users', properties: { user: 17 } }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  });

  it('properties that are not an object → INVALID_PROPERTIES', async () => {
    await rejectsAlone('p1', { id: 'p1', order_id: orderId, meter: 'requests', properties: ['a'] }, 'INVALID_PROPERTIES');
    await rejectsAlone('p2', { id: 'p2', order_id: orderId, meter: 'requests', properties: 'model=large' }, 'INVALID_PROPERTIES');
  });

  it('a property bag nested deeper than 32 levels is refused: over HTTP the body limit answers 400 first; the service rejects that event alone', async () => {
    // Over HTTP the whole body nests at most 32 levels (src/http/depth.ts), the body object not counted: events, event, then 30 for the bag.
    expect(await ingest(t, [{ id: 'p3', order_id: orderId, meter: 'requests', properties: nested(30) }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    const deep = await t.admin('usage/ingest', { events: [{ id: 'p4', order_id: orderId, meter: 'requests', properties: nested(31) }] });
    expect(deep.status).toBe(400);
    expect(deep.body.error?.message).toMatch(/deeper than 32/);
    // Callers in the process (no body parser in front) get the per-event rule: 32 levels fine, 33 rejected.
    const answer = await t.services.usage.ingest([
      { id: 'p5', order_id: orderId, meter: 'requests', properties: nested(32) },
      { id: 'p6', order_id: orderId, meter: 'requests', properties: nested(33) },
    ]);
    expect(answer).toEqual({ accepted: 1, duplicates: 0, rejected: [{ index: 1, code: 'INVALID_PROPERTIES', message: expect.stringMatching(/32/) }] });
  });

  it('a timestamp over 7 days old or over 5 minutes ahead → TIMESTAMP_OUT_OF_WINDOW; not ISO 8601 with a zone → INVALID_TIMESTAMP', async () => {
    await rejectsAlone('w1', { id: 'w1', order_id: orderId, meter: 'requests', timestamp: minutesFromNow(-7 * 24 * 60 - 5) }, 'TIMESTAMP_OUT_OF_WINDOW', /7 days/);
    await rejectsAlone('w2', { id: 'w2', order_id: orderId, meter: 'requests', timestamp: minutesFromNow(10) }, 'TIMESTAMP_OUT_OF_WINDOW', /5 minutes/);
    await rejectsAlone('w3', { id: 'w3', order_id: orderId, meter: 'requests', timestamp: '2026-11-26 10:00:00' }, 'INVALID_TIMESTAMP');
    await rejectsAlone('w4', { id: 'w4', order_id: orderId, meter: 'requests', timestamp: 1_764_150_000 }, 'INVALID_TIMESTAMP');
    await rejectsAlone('w5', { id: 'w5', order_id: orderId, meter: 'requests', timestamp: '2026-13-45T10:00:00Z' }, 'INVALID_TIMESTAMP');
    const inside = await ingest(t, [
      { id: 'w6', order_id: orderId, meter: 'requests', timestamp: minutesFromNow(-7 * 24 * 60 + 5) },
      { id: 'w7', order_id: orderId, meter: 'requests', timestamp: minutesFromNow(4) },
    ]);
    expect(inside).toEqual({ accepted: 2, duplicates: 0, rejected: [] });
  });

  it('a rejected event stores nothing, so the same id sent again correctly is accepted, not a duplicate', async () => {
    await rejectsAlone('again', { id: 'again', order_id: orderId, meter: 'tokens', value: -5 }, 'INVALID_VALUE');
    expect(await ingest(t, [{ id: 'again', order_id: orderId, meter: 'tokens', value: 5 }])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  });

  it('several rejections in one batch are listed in index order', async () => {
    const answer = await ingest(t, [
      { id: 'z1', order_id: 987_655, meter: 'requests' },
      { id: 'z2', order_id: orderId, meter: 'requests' },
      { id: 'z3', order_id: orderId, meter: 'nope' },
      { id: 'z'.repeat(200), order_id: orderId, meter: 'requests' },
    ]);
    expect(answer.accepted).toBe(1);
    expect(answer.rejected.map((r) => [r.index, r.code])).toEqual([
      [0, 'UNKNOWN_ORDER'],
      [2, 'UNKNOWN_METER'],
      [3, 'INVALID_ID'],
    ]);
  });

  describe('a malformed request as a whole → 422 naming the field', () => {
    it('events missing, not an array, an item not an object, or over 1,000 events', async () => {
      for (const params of [{}, { events: 'many' }, { events: [{ id: 'a', order_id: orderId, meter: 'requests' }, 7] }, { events: Array.from({ length: 1001 }, (_, n) => ({ id: `big-${n}`, order_id: orderId, meter: 'requests' })) }]) {
        const reply = await t.admin('usage/ingest', params);
        expect(reply.status).toBe(422);
        expect(reply.body.error?.message).toMatch(/events/);
      }
      expect((await storedEvents(t, orderId)).map((row) => row.event_id)).not.toContain('big-0');
    });

    it('a body over 1 MB (BODY_LIMIT_BYTES) → 413, nothing stored', async () => {
      const pad = 'p'.repeat(1200);
      const events = Array.from({ length: 1000 }, (_, n) => ({ id: `huge-${n}`, order_id: orderId, meter: 'requests', properties: { pad } }));
      const reply = await t.admin('usage/ingest', { events });
      expect(reply.status).toBe(413);
      expect((await storedEvents(t, orderId)).map((row) => row.event_id)).not.toContain('huge-0');
    });

    it('exactly 1,000 events are one batch', async () => {
      const events = Array.from({ length: 1000 }, (_, n) => ({ id: `thousand-${n}`, order_id: orderId, meter: 'requests' }));
      expect(await ingest(t, events)).toEqual({ accepted: 1000, duplicates: 0, rejected: [] });
    });
  });
});
