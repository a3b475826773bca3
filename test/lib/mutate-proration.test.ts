// Plan-change proration (src/lib/proration.ts, CONTRACT §8) against hand-computed values: the start of daily, weekly,
// monthly and yearly periods (month-end and leap-day clamps), the credit for the unused part by the second with its
// half-up rounding and its clamps, the upgrade charge, and which change is an upgrade across periods of different
// units. Pure: no app. Written for `MUTATE_TARGET=proration` (vitest.mutate.config.mjs); every expected number below
// is worked out in the comment beside it.
import { describe, expect, it } from 'vitest';
import { isUpgrade, periodStart, unusedCredit, upgradeCharge } from '../../src/lib/proration.ts';

const at = (iso: string): Date => new Date(iso);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('periodStart', () => {
  it('steps back whole days and weeks, keeping the time of day', () => {
    expect(periodStart(at('2026-03-10T12:34:56Z'), '1D').toISOString()).toBe('2026-03-09T12:34:56.000Z');
    expect(periodStart(at('2026-03-10T12:34:56Z'), '3D').toISOString()).toBe('2026-03-07T12:34:56.000Z');
    // 90 days before 10 March 2026 (2026 is not a leap year): 10 March − 9 (to 1 March) − 28 (Feb) − 31 (Jan) − 22.
    expect(periodStart(at('2026-03-10T00:00:00Z'), '90D').toISOString()).toBe('2025-12-10T00:00:00.000Z');
    expect(periodStart(at('2026-03-10T12:00:00Z'), '1W').toISOString()).toBe('2026-03-03T12:00:00.000Z');
    expect(periodStart(at('2026-03-10T12:00:00Z'), '2W').toISOString()).toBe('2026-02-24T12:00:00.000Z');
    // Days and weeks are fixed lengths, not calendar steps: across a month end as anywhere else.
    expect(periodStart(at('2026-03-01T06:00:00Z'), '1D').toISOString()).toBe('2026-02-28T06:00:00.000Z');
    expect(periodStart(at('2026-03-02T06:00:00Z'), '1W').toISOString()).toBe('2026-02-23T06:00:00.000Z');
  });

  it('steps back calendar months and years, keeping the time of day', () => {
    expect(periodStart(at('2026-03-15T08:30:15Z'), '1M').toISOString()).toBe('2026-02-15T08:30:15.000Z');
    expect(periodStart(at('2026-01-20T23:59:59Z'), '1M').toISOString()).toBe('2025-12-20T23:59:59.000Z');
    expect(periodStart(at('2026-03-15T00:00:00Z'), '13M').toISOString()).toBe('2025-02-15T00:00:00.000Z');
    expect(periodStart(at('2026-05-10T07:00:00Z'), '1Y').toISOString()).toBe('2025-05-10T07:00:00.000Z');
    expect(periodStart(at('2026-05-10T07:00:00Z'), '2Y').toISOString()).toBe('2024-05-10T07:00:00.000Z');
  });

  it("clamps the day to the start month's last day", () => {
    // 31 March − 1 month: February 2026 has 28 days.
    expect(periodStart(at('2026-03-31T08:30:15Z'), '1M').toISOString()).toBe('2026-02-28T08:30:15.000Z');
    // …and 29 in a leap year.
    expect(periodStart(at('2028-03-31T00:00:00Z'), '1M').toISOString()).toBe('2028-02-29T00:00:00.000Z');
    // 31 May − 1 month: April has 30 days.
    expect(periodStart(at('2026-05-31T10:00:00Z'), '1M').toISOString()).toBe('2026-04-30T10:00:00.000Z');
    // 29 Feb 2028 − 1 year: 28 Feb 2027.
    expect(periodStart(at('2028-02-29T00:00:00Z'), '1Y').toISOString()).toBe('2027-02-28T00:00:00.000Z');
    // A day that exists in the start month is kept, even when it is that month's last.
    expect(periodStart(at('2026-04-30T00:00:00Z'), '1M').toISOString()).toBe('2026-03-30T00:00:00.000Z');
    expect(periodStart(at('2026-02-28T00:00:00Z'), '1M').toISOString()).toBe('2026-01-28T00:00:00.000Z');
  });

  it('refuses what is not a period code', () => {
    for (const code of ['1Q', '0D', '91D', '53W', '25M', '6Y', '', 'M']) {
      expect(() => periodStart(at('2026-03-10T00:00:00Z'), code)).toThrow(`Not a period code: ${code}`);
    }
  });
});

describe('unusedCredit', () => {
  const expires = at('2026-03-10T12:00:00Z');
  const before = (ms: number): Date => new Date(expires.getTime() - ms);

  it('credits the unused part of a daily period by the second', () => {
    // 24.00 a day, 6 of 24 hours left: 2400 × 6/24 = 600.
    expect(unusedCredit(2400, '1D', expires, before(6 * HOUR))).toBe(600);
    // 3 days for 9.00, 1 day left: 900 × 1/3 = 300.
    expect(unusedCredit(900, '3D', expires, before(DAY))).toBe(300);
  });

  it('credits the unused part of a weekly period by the second', () => {
    // 7.00 a week, 3 of 7 days left: 300; 2.5 days left: 250.
    expect(unusedCredit(700, '1W', expires, before(3 * DAY))).toBe(300);
    expect(unusedCredit(700, '1W', expires, before(2.5 * DAY))).toBe(250);
    // Two weeks for 14.00, one week left: 700.
    expect(unusedCredit(1400, '2W', expires, before(7 * DAY))).toBe(700);
  });

  it('credits the unused part of monthly and yearly periods over their calendar length', () => {
    // 10 Feb → 10 Mar 2026 is 28 days; 7 days left of 10.00: 1000 × 7/28 = 250.
    expect(unusedCredit(1000, '1M', expires, before(7 * DAY))).toBe(250);
    // 10 Mar → 10 Apr is 31 days; 31 days left is all of it, 1 day left is 1000/31 = 32.26 → 32.
    const april = at('2026-04-10T12:00:00Z');
    expect(unusedCredit(1000, '1M', april, new Date(april.getTime() - 31 * DAY))).toBe(1000);
    expect(unusedCredit(1000, '1M', april, new Date(april.getTime() - DAY))).toBe(32);
    // 10 Mar 2025 → 10 Mar 2026 is 365 days; 73 days left of 365.00: 36500 × 73/365 = 7300.
    expect(unusedCredit(36_500, '1Y', expires, before(73 * DAY))).toBe(7300);
  });

  it('rounds the one division half up', () => {
    // 10.00 a week, 1 day left: 1000/7 = 142.857… → 143; 2 days: 285.714… → 286; 4 days: 571.43 → 571.
    expect(unusedCredit(1000, '1W', expires, before(DAY))).toBe(143);
    expect(unusedCredit(1000, '1W', expires, before(2 * DAY))).toBe(286);
    expect(unusedCredit(1000, '1W', expires, before(4 * DAY))).toBe(571);
    // 0.01 a day: exactly half a day left is 0.5 → 1; one second less is below half → 0.
    expect(unusedCredit(1, '1D', expires, before(12 * HOUR))).toBe(1);
    expect(unusedCredit(1, '1D', expires, before(12 * HOUR - 1000))).toBe(0);
  });

  it('counts whole seconds of what is left, rounding the milliseconds', () => {
    // 8.64 a day is 1 minor unit per 100 s: 150.4 s left counts as 150 s → 1.5 → 2; 149.4 s → 149 s → 1.49 → 1.
    expect(unusedCredit(864, '1D', expires, before(150_400))).toBe(2);
    expect(unusedCredit(864, '1D', expires, before(149_400))).toBe(1);
    // 149.6 s counts as 150 s → 2.
    expect(unusedCredit(864, '1D', expires, before(149_600))).toBe(2);
  });

  it('credits everything before the period starts and nothing once it has ended', () => {
    expect(unusedCredit(700, '1W', expires, before(7 * DAY))).toBe(700);
    expect(unusedCredit(700, '1W', expires, before(8 * DAY))).toBe(700);
    expect(unusedCredit(700, '1W', expires, before(400 * DAY))).toBe(700);
    expect(unusedCredit(700, '1W', expires, expires)).toBe(0);
    expect(unusedCredit(700, '1W', expires, new Date(expires.getTime() + 1000))).toBe(0);
    expect(unusedCredit(700, '1W', expires, new Date(expires.getTime() + 30 * DAY))).toBe(0);
  });

  it('credits nothing for a period that cost nothing (or less), whatever the period code', () => {
    expect(unusedCredit(0, '1W', expires, before(3 * DAY))).toBe(0);
    expect(unusedCredit(-500, '1W', expires, before(3 * DAY))).toBe(0);
    // Nothing paid: nothing to prorate, so the code is not even read.
    expect(unusedCredit(0, 'not-a-period', expires, before(3 * DAY))).toBe(0);
    expect(() => unusedCredit(700, 'not-a-period', expires, before(3 * DAY))).toThrow('Not a period code: not-a-period');
  });
});

describe('upgradeCharge', () => {
  it('charges the new plan less the credit, never below zero', () => {
    expect(upgradeCharge(3000, 990)).toBe(2010);
    expect(upgradeCharge(3000, 0)).toBe(3000);
    expect(upgradeCharge(3000, 3000)).toBe(0);
    expect(upgradeCharge(1000, 1500)).toBe(0);
  });
});

describe('isUpgrade', () => {
  // February 2026 is exactly 4 weeks (28 days); March is 31 days; 2026 is 365 days.
  const february = at('2026-02-01T00:00:00Z');
  const march = at('2026-03-01T00:00:00Z');

  it('compares daily and weekly prices per unit of time', () => {
    // 1.00 a day = 7.00 a week: the same rate is not an upgrade, one minor unit more is.
    expect(isUpgrade(100, '1D', 700, '1W', march)).toBe(false);
    expect(isUpgrade(100, '1D', 701, '1W', march)).toBe(true);
    expect(isUpgrade(700, '1W', 100, '1D', march)).toBe(false);
    expect(isUpgrade(701, '1W', 100, '1D', march)).toBe(false);
    expect(isUpgrade(700, '1W', 101, '1D', march)).toBe(true);
    // 2 weeks for 13.00 against 1 week for 7.00: 6.50 a week < 7.00.
    expect(isUpgrade(1300, '2W', 700, '1W', march)).toBe(true);
    expect(isUpgrade(700, '1W', 1300, '2W', march)).toBe(false);
  });

  it('compares weekly and monthly prices over the calendar month that starts now', () => {
    // In February 4 weekly payments of 3.00 equal 12.00 a month.
    expect(isUpgrade(300, '1W', 1200, '1M', february)).toBe(false);
    expect(isUpgrade(300, '1W', 1201, '1M', february)).toBe(true);
    expect(isUpgrade(1200, '1M', 300, '1W', february)).toBe(false);
    expect(isUpgrade(1199, '1M', 300, '1W', february)).toBe(true);
    // From 1 March the month is 31 days: 12.00 a month is 12/31 a day < 3.00/7 a day, so weekly at 3.00 costs more.
    expect(isUpgrade(1200, '1M', 300, '1W', march)).toBe(true);
    // …and 13.29 a month (13.29/31 = 0.4287 > 3/7 = 0.4286) costs more than 3.00 a week.
    expect(isUpgrade(300, '1W', 1329, '1M', march)).toBe(true);
    expect(isUpgrade(300, '1W', 1328, '1M', march)).toBe(false);
  });

  it('compares monthly and yearly prices', () => {
    // 365 × 1.00 a day = 365.00 a year.
    expect(isUpgrade(100, '1D', 36_500, '1Y', march)).toBe(false);
    expect(isUpgrade(100, '1D', 36_501, '1Y', march)).toBe(true);
    expect(isUpgrade(36_500, '1Y', 100, '1D', march)).toBe(false);
    expect(isUpgrade(36_499, '1Y', 100, '1D', march)).toBe(true);
  });

  it('is never an upgrade to the same rate, and always one to a dearer plan of the same period', () => {
    for (const period of ['1D', '1W', '1M', '1Y']) {
      expect(isUpgrade(1000, period, 1000, period, march)).toBe(false);
      expect(isUpgrade(1000, period, 1001, period, march)).toBe(true);
      expect(isUpgrade(1001, period, 1000, period, march)).toBe(false);
      expect(isUpgrade(0, period, 1, period, march)).toBe(true);
    }
  });
});
