// A property test of the credit ledger (issue 24): random sequences of credits, promotional grants with expiries,
// debits, reversals of debits and expiry passes on a moving clock, run against the real service and database and
// against a plain model written here. After every step: the balance equals the model's, the ledger is consistent
// (tests/helpers/credit-ledger.ts: sum = what is left of the credits, never below zero), a debit the spendable credit
// cannot cover is refused and writes nothing, and an expiry takes only the unused part of a grant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/platform/errors.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';

interface ModelLot {
  id: number;
  left: number;
  promo: boolean;
  expiresAt: number | null;
  order: number;
}

/** A small seeded generator, so a failing sequence can be replayed from its seed. */
function generator(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return (((x ^ (x >>> 14)) >>> 0) % below);
  };
}

/** The model's burn-down order, written independently of src/modules/credit/burn-down.ts. */
function modelOrder(lots: ModelLot[]): ModelLot[] {
  const dated = lots.filter((lot) => lot.expiresAt !== null).toSorted((a, b) => a.expiresAt! - b.expiresAt! || Number(b.promo) - Number(a.promo) || a.order - b.order);
  const open = lots.filter((lot) => lot.expiresAt === null).toSorted((a, b) => Number(b.promo) - Number(a.promo) || a.order - b.order);
  return [...dated, ...open];
}

describe('credit ledger properties', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('keeps balance = sum of entries = the model, never below zero, over random sequences', async () => {
    const credits = t.services.credits;
    for (let seed = 1; seed <= 25; seed += 1) {
      const random = generator(seed * 7919);
      const client = await t.createClient();
      let clock = Date.now() + 60_000;
      const lots: ModelLot[] = [];
      const debits: Array<{ id: number; amount: number; reversed: boolean }> = [];
      let order = 0;
      const spendable = () => lots.filter((lot) => lot.left > 0 && (lot.expiresAt === null || lot.expiresAt > clock));
      for (let step = 0; step < 40; step += 1) {
        const now = new Date(clock);
        const op = random(10);
        const amount = 1 + random(2_000);
        const context = `seed ${seed * 7919}, step ${step}, op ${op}, amount ${amount}`;
        if (op <= 1) {
          const id = await credits.addFunds({ clientId: client.id, amount, description: 'paid', type: 'adjust', expiresAt: null, key: null, staffId: null }, now);
          lots.push({ id, left: amount, promo: false, expiresAt: null, order: order++ });
        } else if (op <= 3) {
          // Whole seconds, as stored; never two grants expiring in the same second with equal rank ambiguity.
          const expiresAt = random(3) === 0 ? null : Math.floor(clock / 1000) * 1000 + (1 + random(600)) * 1000;
          const iso = expiresAt === null ? null : new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z');
          const id = await credits.addFunds({ clientId: client.id, amount, description: 'promo', type: 'grant', expiresAt: iso, key: null, staffId: null }, now);
          lots.push({ id, left: amount, promo: true, expiresAt, order: order++ });
        } else if (op <= 6) {
          const available = spendable().reduce((sum, lot) => sum + lot.left, 0);
          if (available >= amount) {
            const id = await credits.addFunds({ clientId: client.id, amount: -amount, description: 'use', type: 'adjust', expiresAt: null, key: null, staffId: null }, now);
            let left = amount;
            for (const lot of modelOrder(spendable())) {
              const take = Math.min(lot.left, left);
              lot.left -= take;
              left -= take;
            }
            debits.push({ id, amount, reversed: false });
          } else {
            const before = await credits.balance(client.id);
            await expect(credits.addFunds({ clientId: client.id, amount: -amount, description: 'use', type: 'adjust', expiresAt: null, key: null, staffId: null }, now), context).rejects.toBeInstanceOf(ApiError);
            expect(await credits.balance(client.id), context).toBe(before);
          }
        } else if (op === 7 && debits.some((debit) => !debit.reversed)) {
          const open = debits.filter((debit) => !debit.reversed);
          const debit = open[random(open.length)]!;
          const id = await credits.reverse(debit.id, null, now);
          debit.reversed = true;
          lots.push({ id, left: debit.amount, promo: false, expiresAt: null, order: order++ });
        } else {
          clock += random(400) * 1000;
          const lapsed = lots.filter((lot) => lot.expiresAt !== null && lot.expiresAt <= clock && lot.left > 0);
          const passed = await credits.expireDue(new Date(clock));
          expect(passed.failed, context).toBe(0);
          // Other clients of this app have no lapsed grants left over (each sequence ends with a full pass).
          expect(passed.expired, context).toBe(lapsed.length);
          for (const lot of lapsed) {
            const row = await t.services.db.selectFrom('credit_entries').select('amount').where('idempotency_key', '=', `expire:${lot.id}`).executeTakeFirstOrThrow();
            expect(row.amount, `${context}: the expiry of grant ${lot.id} takes only its unused part`).toBe(-lot.left);
            lot.left = 0;
          }
        }
        const modelBalance = lots.reduce((sum, lot) => sum + lot.left, 0);
        expect(await credits.balance(client.id), context).toBe(modelBalance);
        expect(modelBalance).toBeGreaterThanOrEqual(0);
      }
      // Close the sequence: everything dated lapses, so the next sequence's pass sees only its own grants.
      clock += 700_000;
      await credits.expireDue(new Date(clock));
      for (const lot of lots) if (lot.expiresAt !== null) lot.left = 0;
      expect(await credits.balance(client.id)).toBe(lots.reduce((sum, lot) => sum + lot.left, 0));
      await expectLedgerConsistent(t.services.db);
    }
  });
});
