// Key analytics' counting (issue 25): the hot path's tally per minute, what the flush makes of it (each answer in its
// minute, hour and day bucket; the latest use per key; unknown keys per address), every reason the check answers
// mapped to an outcome, and the buckets each range and granularity covers.
import { describe, expect, it } from 'vitest';
import { KEY_OUTCOMES, OUTCOME_OF } from '../../../src/modules/serviceapikey/analytics/outcomes.ts';
import { PendingRows } from '../../../src/modules/serviceapikey/analytics/outcome-writer.ts';
import { bucketsOf } from '../../../src/modules/serviceapikey/analytics/ranges.ts';
import { MAX_ADDRESSES_PER_MINUTE, OTHER_ADDRESSES, OutcomeTally } from '../../../src/modules/serviceapikey/analytics/tally.ts';

const T = Date.UTC(2030, 0, 31, 23, 59, 30); // 30 s before a minute, an hour, a day and a month end

describe('the tally', () => {
  it('maps every reason but NOT_FOUND to its own outcome', () => {
    expect(Object.values(OUTCOME_OF).toSorted()).toEqual([...KEY_OUTCOMES].toSorted());
    expect(Object.keys(OUTCOME_OF).toSorted()).toEqual(['CLIENT_INACTIVE', 'DISABLED', 'EXPIRED', 'LIMIT_EXCEEDED', 'NOT_ACTIVE', 'NO_CREDIT', 'RATE_LIMITED', 'TRIAL_ENDED', 'VALID']);
  });

  it('counts per minute, key and outcome, and unknown keys per address; take hands over everything once', () => {
    const tally = new OutcomeTally();
    expect(tally.pending).toBe(false);
    tally.countKey(7, 'VALID', T, '192.0.2.1');
    tally.countKey(7, 'VALID', T + 1000, '192.0.2.2');
    tally.countKey(7, 'NO_CREDIT', T + 2000, '192.0.2.3');
    tally.countKey(8, 'TRIAL_ENDED', T + 3000, null);
    tally.countNotFound('192.0.2.9', T);
    tally.countNotFound(null, T);
    // The next minute (and hour, day, month).
    tally.countKey(7, 'VALID', T + 30_000, '192.0.2.4');
    tally.countNotFound('192.0.2.9', T + 31_000);
    expect(tally.pending).toBe(true);
    const minutes = tally.take();
    expect(tally.pending).toBe(false);
    expect(tally.take()).toEqual([]);
    expect(minutes.map((m) => m.minute)).toEqual([T - 30_000, T + 30_000]);
    expect(minutes[0]!.keys.get(7)).toMatchObject({ counts: { valid: 2, no_credit: 1 }, lastAt: T + 2000, lastIp: '192.0.2.3' });
    expect(minutes[0]!.keys.get(8)).toMatchObject({ counts: { trial_ended: 1 }, lastIp: null });
    expect([...minutes[0]!.notFound]).toEqual([['192.0.2.9', 1], ['', 1]]);
    expect(minutes[1]!.keys.get(7)?.counts.valid).toBe(1);
  });

  it('counts addresses past the per-minute bound together, so ever-new addresses cannot grow memory', () => {
    const tally = new OutcomeTally();
    for (let i = 0; i < MAX_ADDRESSES_PER_MINUTE; i++) tally.countNotFound(`10.0.${i >> 8}.${i & 255}`, T);
    tally.countNotFound('10.0.0.0', T);
    tally.countNotFound('192.0.2.1', T);
    tally.countNotFound('192.0.2.2', T);
    const [minute] = tally.take();
    expect(minute!.notFound.size).toBe(MAX_ADDRESSES_PER_MINUTE + 1);
    expect(minute!.notFound.get('10.0.0.0')).toBe(2);
    expect(minute!.notFound.get(OTHER_ADDRESSES)).toBe(2);
  });

  it('starts a new minute when the clock goes back', () => {
    const tally = new OutcomeTally();
    tally.countKey(1, 'VALID', T, null);
    tally.countKey(1, 'VALID', T - 120_000, null);
    expect(tally.take().map((m) => m.minute)).toEqual([T - 30_000, T - 150_000]);
  });
});

describe('the rows a flush writes', () => {
  it('adds each minute to its minute, hour and day rows, merges retries, and keeps the latest use', () => {
    const tally = new OutcomeTally();
    tally.countKey(7, 'VALID', T, '192.0.2.1');
    tally.countKey(7, 'RATE_LIMITED', T + 40_000, '192.0.2.2');
    tally.countNotFound('192.0.2.9', T);
    const pending = new PendingRows();
    pending.add(tally.take());
    const rows = [...pending.outcomes.values()].map(({ unit, at, valid, rate_limited }) => ({ unit, at, valid, rate_limited }));
    expect(rows).toEqual([
      { unit: 'minute', at: '2030-01-31T23:59:00Z', valid: 1, rate_limited: 0 },
      { unit: 'hour', at: '2030-01-31T23:00:00Z', valid: 1, rate_limited: 0 },
      { unit: 'day', at: '2030-01-31T00:00:00Z', valid: 1, rate_limited: 0 },
      { unit: 'minute', at: '2030-02-01T00:00:00Z', valid: 0, rate_limited: 1 },
      { unit: 'hour', at: '2030-02-01T00:00:00Z', valid: 0, rate_limited: 1 },
      { unit: 'day', at: '2030-02-01T00:00:00Z', valid: 0, rate_limited: 1 },
    ]);
    expect([...pending.notFound.values()].map((row) => row.count)).toEqual([1, 1, 1]);
    expect(pending.lastUse.get(7)).toMatchObject({ at: new Date(T + 40_000).toISOString(), ip: '192.0.2.2' });
    // A retry (rows still pending) merges with what was counted since; an older last use never replaces a newer one.
    tally.countKey(7, 'VALID', T + 40_500, '192.0.2.3');
    const older = new OutcomeTally();
    older.countKey(7, 'VALID', T, '192.0.2.8');
    pending.add(tally.take());
    pending.add(older.take());
    expect(pending.outcomes.get('day 2030-02-01T00:00:00Z 7')).toMatchObject({ valid: 1, rate_limited: 1 });
    expect(pending.outcomes.get('day 2030-01-31T00:00:00Z 7')).toMatchObject({ valid: 2 });
    expect(pending.lastUse.get(7)).toMatchObject({ ip: '192.0.2.3' });
  });
});

describe('ranges', () => {
  it('defaults 24h to hours, 30d and 12m to days, and ends with the bucket holding now', () => {
    expect(bucketsOf('24h', undefined, T)).toEqual({ unit: 'hour', first: Date.UTC(2030, 0, 31, 0), last: Date.UTC(2030, 0, 31, 23), count: 24 });
    expect(bucketsOf('24h', 'minute', T)).toMatchObject({ count: 1440, last: T - 30_000 });
    expect(bucketsOf('24h', 'day', T)).toMatchObject({ count: 2, first: Date.UTC(2030, 0, 30) });
    expect(bucketsOf('30d', undefined, T)).toMatchObject({ unit: 'day', count: 30, first: Date.UTC(2030, 0, 2) });
    expect(bucketsOf('30d', 'hour', T)).toMatchObject({ count: 720 });
    expect(bucketsOf('12m', undefined, T)).toMatchObject({ unit: 'day', count: 365 });
  });

  it('refuses what would pass 3000 points or the retention', () => {
    expect(() => bucketsOf('30d', 'minute', T)).toThrow(/granularity.*"minute" is not served for range "30d"/);
    expect(() => bucketsOf('12m', 'hour', T)).toThrow(/use "day"/);
  });
});
