// The meters' state the check holds per order (check/meter-state.ts) and the `m<order id>` messages that tell other
// processes to re-read it (sync/invalidation.ts): no database, a fake reader.
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/schema.ts';
import { KeyCache } from '../../../src/modules/serviceapikey/check/cache.ts';
import { createMeterState, meterAtLimit, METER_REFRESH_MS, orderMetersOf, rollMeters, type MeterQuantityReader } from '../../../src/modules/serviceapikey/check/meter-state.ts';
import { ClusterChannel, LocalChannel, metersToken, refToken } from '../../../src/modules/serviceapikey/sync/invalidation.ts';
import type { MeterOptions } from '../../../src/modules/serviceapikey/usage/meters-config.ts';

const meter = (code: string, hardLimit: number | null): MeterOptions => ({ code, name: code, unit: 'unit', aggregation: 'count', included: null, overage: null, hard_limit: hardLimit, alerts: [] });
const METERS = [meter('tokens', null), meter('requests', 5), meter('bytes', 10)];
const db = {} as Kysely<Database>;

/** A reader answering from `answers` in turn; each answer a Map, or an Error to throw. */
function reader(answers: Array<Map<string, number> | Error>, gate?: Promise<void>): MeterQuantityReader & { calls: string[] } {
  const calls: string[] = [];
  const read = async (_db: Kysely<Database>, orderId: number, periodStart: string) => {
    calls.push(`${orderId} ${periodStart}`);
    if (gate !== undefined) await gate;
    const answer = answers.shift() ?? new Map<string, number>();
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return Object.assign(read, { calls });
}

function setUp(read: MeterQuantityReader) {
  const logged: string[] = [];
  const reached: Array<[number, string]> = [];
  let closed = false;
  const state = createMeterState({ db, read, log: (error, what) => logged.push(`${what}: ${String(error)}`), closed: () => closed, onLimitReached: (orderId, code) => reached.push([orderId, code]) });
  return { state, logged, reached, close: () => (closed = true) };
}

describe('meterAtLimit and the state of an order', () => {
  it('names the first meter (in the plan order) whose quantity reached its hard limit; meters without one never', () => {
    expect(meterAtLimit(METERS, new Map([['tokens', 1e9]]))).toBeNull();
    expect(meterAtLimit(METERS, new Map([['requests', 4], ['bytes', 9]]))).toBeNull();
    expect(meterAtLimit(METERS, new Map([['requests', 5]]))).toBe('requests');
    expect(meterAtLimit(METERS, new Map([['requests', 6], ['bytes', 10]]))).toBe('requests');
    expect(meterAtLimit(METERS, new Map([['bytes', 10]]))).toBe('bytes');
    expect(meterAtLimit([meter('off', 0)], new Map())).toBe('off');
  });

  it('a plan without meters holds nothing; one without hard limits is not `limited`', () => {
    expect(orderMetersOf([], 'p', new Map(), 0)).toBeNull();
    expect(orderMetersOf([meter('tokens', null)], 'p', new Map(), 0)?.limited).toBe(false);
    expect(orderMetersOf(METERS, 'p', new Map([['bytes', 12]]), 7)).toMatchObject({ limited: true, limitedBy: 'bytes', readAt: 7, periodStart: 'p' });
  });

  it('a new period starts from 0 and asks for a read', () => {
    const held = orderMetersOf(METERS, 'april', new Map([['requests', 9]]), 100)!;
    rollMeters(held, 'may');
    expect(held).toMatchObject({ periodStart: 'may', limitedBy: null, readAt: 0 });
    expect([...held.quantities]).toEqual([['tokens', 0], ['requests', 0], ['bytes', 0]]);
  });
});

describe('refreshing the quantities', () => {
  it('applies a read, and tells once when a meter newly reaches its limit', async () => {
    const read = reader([new Map([['requests', 5]]), new Map([['requests', 6]])]);
    const { state, reached } = setUp(read);
    const held = orderMetersOf(METERS, 'p', new Map(), 0)!;
    await state.refresh(7, held);
    expect(held.limitedBy).toBe('requests');
    await state.refresh(7, held);
    expect(reached).toEqual([[7, 'requests']]);
    expect(read.calls).toEqual(['7 p', '7 p']);
  });

  it('a failed read is logged and keeps the quantities held; the next one applies', async () => {
    const read = reader([new Error('database down'), new Map([['bytes', 10]])]);
    const { state, logged } = setUp(read);
    const held = orderMetersOf(METERS, 'p', new Map([['requests', 2]]), 50)!;
    await state.refresh(1, held);
    expect(logged).toEqual(['meter quantities refresh: Error: database down']);
    expect(held).toMatchObject({ limitedBy: null, readAt: 50, reading: null });
    expect(held.quantities.get('requests')).toBe(2);
    await state.refresh(1, held);
    expect(held.limitedBy).toBe('bytes');
  });

  it('a change heard during a read reads once more, and every caller waits for the last read', async () => {
    let open = (): void => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const read = reader([new Map([['requests', 1]]), new Map([['requests', 5]])], gate);
    const { state } = setUp(read);
    const held = orderMetersOf(METERS, 'p', new Map(), 0)!;
    const first = state.refresh(3, held);
    const second = state.refresh(3, held);
    open();
    await second;
    expect(read.calls).toHaveLength(2);
    expect(held.limitedBy).toBe('requests');
    await first;
    expect(held.reading).toBeNull();
  });

  it("quantities read for a period that ended meanwhile are dropped, and the new period's are read", async () => {
    let open = (): void => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const read = reader([new Map([['requests', 50]]), new Map([['requests', 1]])], gate);
    const { state } = setUp(read);
    const held = orderMetersOf(METERS, 'april', new Map(), 0)!;
    const reading = state.refresh(3, held);
    rollMeters(held, 'may');
    open();
    await reading;
    expect(read.calls).toEqual(['3 april', '3 may']);
    expect(held.limitedBy).toBeNull();
    expect(held.quantities.get('requests')).toBe(1);
  });

  it('keepFresh reads only when stale, only for hard-limited meters unless shown, never twice at once, never once closed', async () => {
    const read = reader([]);
    const { state, close } = setUp(read);
    const now = 1_000_000;
    const limited = orderMetersOf(METERS, 'p', new Map(), now)!;
    state.keepFresh(1, limited, now + METER_REFRESH_MS);
    expect(read.calls).toHaveLength(0);
    state.keepFresh(1, limited, now + METER_REFRESH_MS + 1);
    state.keepFresh(1, limited, now + METER_REFRESH_MS + 2);
    expect(read.calls).toHaveLength(1);
    await limited.reading;
    const shownOnly = orderMetersOf([meter('tokens', null)], 'p', new Map(), now)!;
    state.keepFresh(2, shownOnly, now + 10 * METER_REFRESH_MS);
    expect(read.calls).toHaveLength(1);
    state.keepFresh(2, shownOnly, now + 10 * METER_REFRESH_MS, true);
    expect(read.calls).toHaveLength(2);
    await shownOnly.reading;
    close();
    limited.readAt = 0;
    state.keepFresh(1, limited, now);
    await state.refresh(1, limited);
    expect(read.calls).toHaveLength(2);
  });
});

describe('the `m<order id>` messages', () => {
  it('another process’s message calls onMetersChanged with the order id; malformed tokens are skipped', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    const channel = new ClusterChannel(cache);
    const heard: number[] = [];
    const keys: number[] = [];
    channel.onMetersChanged = (orderId) => heard.push(orderId);
    channel.onKeyChanged = (ref) => keys.push(ref.keyId);
    channel.listen();
    try {
      const payload = [metersToken(12), 'm', 'mx', 'm12345678901', metersToken(4), refToken(9, 4)].join(',');
      process.emit('message', { t: 'tollgate:invalidate', payload }, undefined);
      expect(heard).toEqual([12, 4]);
      expect(keys).toEqual([9]);
    } finally {
      void channel.close();
    }
  });

  it("this process's own order references are not heard back (it re-read its quantities itself)", () => {
    const channel = new LocalChannel(new KeyCache({ maxEntries: 10 }));
    const heard: number[] = [];
    const keys: number[] = [];
    channel.onMetersChanged = (orderId) => heard.push(orderId);
    channel.onKeyChanged = (ref) => keys.push(ref.keyId);
    channel.publish([metersToken(3), refToken(5, 3)]);
    expect(heard).toEqual([]);
    expect(keys).toEqual([5]);
  });
});
