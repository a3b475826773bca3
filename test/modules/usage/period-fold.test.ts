// The fold of a period's day rows into each meter's quantity (usage/quantities.ts foldPeriodQuantities), which the
// close and the dashboard's projected overage both read through: count, sum and unique_count add their days, max takes
// the greatest day, latest the row with the latest event whatever the rows' order; a meter without rows is 0, and rows
// of a meter the plan does not have are left out. Pure: no database.
import { describe, expect, it } from 'vitest';
import { foldPeriodQuantities } from '../../../src/modules/usage/quantities.ts';

const METERS = [
  { code: 'requests', aggregation: 'count' as const },
  { code: 'tokens', aggregation: 'sum' as const },
  { code: 'users', aggregation: 'unique_count' as const },
  { code: 'storage', aggregation: 'max' as const },
  { code: 'seats', aggregation: 'latest' as const },
  { code: 'idle', aggregation: 'sum' as const },
];

const row = (meter: string, quantity: number, latestAt: string | null = null) => ({ meter, quantity, latest_at: latestAt });

describe('foldPeriodQuantities', () => {
  it('adds count, sum and unique_count days, takes the greatest max day and the latest latest row; 0 without rows; ignores other meters', () => {
    const rows = [
      row('requests', 3),
      row('tokens', 1_500.5),
      row('seats', 4, '2031-05-03T10:00:00.000Z'),
      row('storage', 12),
      row('users', 2),
      row('requests', 5),
      row('seats', 9, '2031-05-09T08:00:00.000Z'),
      row('storage', 15),
      row('tokens', 499.5),
      row('seats', 6, '2031-05-05T23:00:00.000Z'),
      row('storage', 7),
      row('users', 1),
      row('calls', 1_000),
      row('retired', 50),
    ];
    const expected = new Map([
      ['requests', 8],
      ['tokens', 2_000],
      ['users', 3],
      ['storage', 15],
      ['seats', 9],
      ['idle', 0],
    ]);
    expect(foldPeriodQuantities(rows, METERS)).toEqual(expected);
    // The rows' order does not matter.
    expect(foldPeriodQuantities(rows.toReversed(), METERS)).toEqual(expected);
  });

  it('answers an empty map for a plan without meters', () => {
    expect(foldPeriodQuantities([row('tokens', 5)], [])).toEqual(new Map());
  });
});
