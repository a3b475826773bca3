// The burn-down order on its own (src/modules/credit/burn-down.ts): soonest expiry first, promotional before paid,
// oldest first; a debit larger than the credit is not planned at all; `first` goes before everything.
import { describe, expect, it } from 'vitest';
import { allocate, type Lot } from '../../../src/modules/credit/burn-down.ts';

const lot = (id: number, remaining: number, promotional = false, expiresAt: string | null = null): Lot => ({ id, remaining, promotional, expiresAt });

describe('burn-down', () => {
  const lots = [lot(1, 500), lot(2, 300, true), lot(3, 200, true, '2030-02-01T00:00:00Z'), lot(4, 100, false, '2030-01-01T00:00:00Z'), lot(5, 50, true)];

  it('takes the soonest-expiring credit first, then promotional before paid, then the oldest', () => {
    expect(allocate(lots, 1150)).toEqual([
      { lotId: 4, amount: 100 },
      { lotId: 3, amount: 200 },
      { lotId: 2, amount: 300 },
      { lotId: 5, amount: 50 },
      { lotId: 1, amount: 500 },
    ]);
    expect(allocate(lots, 150)).toEqual([
      { lotId: 4, amount: 100 },
      { lotId: 3, amount: 50 },
    ]);
  });

  it('plans nothing when the credit does not cover the debit, and skips empty credit', () => {
    expect(allocate(lots, 1151)).toBeNull();
    expect(allocate([lot(1, 0), lot(2, 10)], 10)).toEqual([{ lotId: 2, amount: 10 }]);
    expect(allocate([], 1)).toBeNull();
  });

  it('spends `first` before everything else', () => {
    expect(allocate(lots, 600, 1)).toEqual([
      { lotId: 1, amount: 500 },
      { lotId: 4, amount: 100 },
    ]);
  });
});
