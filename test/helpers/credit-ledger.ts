// The ledger check the credit tests run after each test (issue 24): over every account of the database, the balance
// (the sum of its entries) equals what is left of its credits, every debit is fully allocated to credits of its own
// account, no credit gives more than it holds, and no balance is below zero — except by prepaid usage drawn past it
// (issue 24 item 2): a `consume` line of usage (key `usage:…`) may be only partly allocated, the rest being debt, and
// then the balance is what is left of its credits less that debt.
import { expect } from 'vitest';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';

export async function expectLedgerConsistent(db: Kysely<Database>): Promise<void> {
  const entries = await db.selectFrom('credit_entries').selectAll().execute();
  const allocations = await db.selectFrom('credit_allocations').selectAll().execute();
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  const takenFrom = new Map<number, number>();
  const allocatedTo = new Map<number, number>();
  for (const part of allocations) {
    const lot = byId.get(part.lot_id);
    const debit = byId.get(part.debit_id);
    expect(lot, `allocation ${part.id} names credit ${part.lot_id}`).toBeDefined();
    expect(debit, `allocation ${part.id} names debit ${part.debit_id}`).toBeDefined();
    expect(lot!.amount).toBeGreaterThan(0);
    expect(debit!.amount).toBeLessThan(0);
    expect(part.amount).toBeGreaterThan(0);
    expect([lot!.client_id, lot!.currency]).toEqual([debit!.client_id, debit!.currency]);
    takenFrom.set(part.lot_id, (takenFrom.get(part.lot_id) ?? 0) + part.amount);
    allocatedTo.set(part.debit_id, (allocatedTo.get(part.debit_id) ?? 0) + part.amount);
  }
  const sums = new Map<string, { balance: number; left: number; debt: number }>();
  for (const entry of entries) {
    const account = `${entry.client_id}:${entry.currency}`;
    const sum = sums.get(account) ?? { balance: 0, left: 0, debt: 0 };
    sum.balance += entry.amount;
    if (entry.amount > 0) {
      const taken = takenFrom.get(entry.id) ?? 0;
      expect(taken, `credit ${entry.id} gave more than it holds`).toBeLessThanOrEqual(entry.amount);
      sum.left += entry.amount - taken;
    } else if (entry.kind === 'consume' && entry.idempotency_key.startsWith('usage:')) {
      const allocated = allocatedTo.get(entry.id) ?? 0;
      expect(allocated, `debit ${entry.id} is allocated beyond its amount`).toBeLessThanOrEqual(-entry.amount);
      sum.debt += -entry.amount - allocated;
    } else {
      expect(allocatedTo.get(entry.id) ?? 0, `debit ${entry.id} is not fully allocated`).toBe(-entry.amount);
    }
    sums.set(account, sum);
  }
  for (const [account, sum] of sums) {
    expect(sum.balance, `account ${account}: the balance is what is left of its credits less its debt`).toBe(sum.left - sum.debt);
    if (sum.debt === 0) expect(sum.balance, `account ${account} is below zero`).toBeGreaterThanOrEqual(0);
  }
}
