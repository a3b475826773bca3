// Coupons (src/modules/product/promos.ts, CONTRACT §8) through their service, one app for the whole file: what a
// stored coupon reads back as, every refusal with its message, what an update keeps, the validity window at its exact
// boundaries, once-per-client and max_uses at redemption (rolled back with the checkout's transaction), renewal
// discounts, and which lines a coupon covers. The HTTP side (roles, envelopes, concurrent checkouts) is
// test/modules/product/coupons.test.ts; this file is kept lean because `MUTATE_TARGET=promos` re-runs it for every mutant.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { covers, discountOf, type DiscountableLine, type PromoInput, type PromoService } from '../../../src/modules/product/promos.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { makeProduct } from '../../helpers/selling-fixtures.ts';

describe('coupons through their service', () => {
  let t: TestApp;
  let promos: PromoService;
  let pro: number;
  let other: number;
  let alice: number;
  let bob: number;
  let codes = 0;

  /** A 422 naming `param` with exactly this problem. */
  const refused = async (promise: Promise<unknown>, param: string, problem: string): Promise<void> => {
    await expect(promise).rejects.toMatchObject({ code: 422, status: 422, message: `Parameter "${param}" ${problem}` });
  };
  /** A new coupon with a fresh code: 10% off everything unless `input` says otherwise. */
  const coupon = (input: PromoInput = {}): Promise<number> => promos.create({ code: `C${++codes}`, type: 'percentage', value: '10', ...input });
  const lines = (productId = pro, period: string | null = '1M', total = 1000): DiscountableLine[] => [{ productId, period, total }];
  const codeOf = async (id: number): Promise<string> => (await promos.get(id)).code;
  const usedCount = async (id: number): Promise<number> => (await promos.get(id)).used;
  const redeem = async (id: number, clientId: number, now = new Date()): Promise<void> => {
    const row = await promos.requireRow(id);
    await inTransaction(t.services.db, (trx) => promos.redeem(trx, row, clientId, null, now));
  };

  beforeAll(async () => {
    t = await createTestApp();
    promos = t.services.promos;
    pro = await makeProduct(t, { title: 'Pro' });
    other = await makeProduct(t, { title: 'Other' });
    alice = (await t.createClient()).id;
    bob = (await t.createClient()).id;
  });
  afterAll(async () => {
    await t.close();
  });

  describe('which lines a coupon covers', () => {
    it('covers every line when it names no products and no periods, else only the named ones', () => {
      expect(covers({ products: null, periods: null }, pro, null)).toBe(true);
      expect(covers({ products: JSON.stringify([pro, other]), periods: null }, other, '1Y')).toBe(true);
      expect(covers({ products: JSON.stringify([pro]), periods: null }, other, '1M')).toBe(false);
      expect(covers({ products: null, periods: JSON.stringify(['1M']) }, other, '1M')).toBe(true);
      expect(covers({ products: null, periods: JSON.stringify(['1M']) }, other, '1Y')).toBe(false);
      // A line without a period (a one-time product) is not covered by a coupon restricted to periods.
      expect(covers({ products: null, periods: JSON.stringify(['1M']) }, other, null)).toBe(false);
      expect(covers({ products: JSON.stringify([pro]), periods: JSON.stringify(['1Y']) }, pro, '1M')).toBe(false);
    });

    it('discounts the covered lines only: a percentage rounded half up once, a fixed amount capped at their sum', () => {
      const cart: DiscountableLine[] = [
        { productId: pro, period: '1M', total: 1004 },
        { productId: other, period: '1M', total: 2000 },
        { productId: pro, period: '1Y', total: 4000 },
      ];
      const only = (type: 'percentage' | 'absolute', value: number, products: number[] | null, periods: string[] | null) => ({
        type,
        value,
        products: products === null ? null : JSON.stringify(products),
        periods: periods === null ? null : JSON.stringify(periods),
      });
      // 12.5% of 10.04 = 1.255 → 1.26 (half up); of all three lines (70.04) = 8.755 → 8.76.
      expect(discountOf(only('percentage', 12_500, [pro], ['1M']), cart)).toBe(126);
      expect(discountOf(only('percentage', 12_500, null, null), cart)).toBe(876);
      // Product `pro` in both periods: 50.04 × 10% = 5.004 → 5.00.
      expect(discountOf(only('percentage', 10_000, [pro], null), cart)).toBe(500);
      expect(discountOf(only('percentage', 100_000, null, ['1M']), cart)).toBe(3004);
      expect(discountOf(only('absolute', 500, [pro], ['1M']), cart)).toBe(500);
      expect(discountOf(only('absolute', 5000, [pro], ['1M']), cart)).toBe(1004);
      expect(discountOf(only('absolute', 500, [pro], ['6M']), cart)).toBe(0);
      expect(discountOf(only('absolute', 500, null, null), [])).toBe(0);
    });
  });

  describe('creating and reading', () => {
    it('stores a coupon as given, upper-casing its code and dropping repeated products and periods', async () => {
      const id = await promos.create({
        code: 'spring-sale_1',
        type: 'absolute',
        value: '5',
        products: [pro, pro, other],
        periods: ['1M', '1M', '1Y'],
        max_uses: 3,
        once_per_client: false,
        recurring: true,
        start_at: '2030-01-01T00:00:00Z',
        end_at: '2030-02-01',
      });
      expect(await promos.get(id)).toEqual({
        id,
        code: 'SPRING-SALE_1',
        type: 'absolute',
        value: '5.00',
        products: [pro, other],
        periods: ['1M', '1Y'],
        max_uses: 3,
        used: 0,
        once_per_client: false,
        recurring: true,
        active: true,
        start_at: '2030-01-01T00:00:00Z',
        end_at: '2030-02-01T00:00:00Z',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      });
      const percent = await promos.create({ code: 'pct', type: 'percentage', value: '12.5', once_per_client: true });
      expect(await promos.get(percent)).toMatchObject({ value: '12.5', products: null, periods: null, max_uses: null, once_per_client: true, recurring: false, active: true });
      const inactive = await coupon({ active: false });
      expect((await promos.get(inactive)).active).toBe(false);
    });

    it('refuses a bad code, a zero or missing value, unknown products and periods, and a window that ends before it starts', async () => {
      await refused(coupon({ code: 'two words' }), 'code', 'must be 1-64 letters, digits, - or _');
      await refused(coupon({ code: 'x'.repeat(65) }), 'code', 'must be 1-64 letters, digits, - or _');
      await refused(coupon({ value: '0' }), 'value', 'must be more than 0');
      await refused(coupon({ type: 'absolute', value: '0.00' }), 'value', 'must be more than 0');
      // The API's schema requires a value; the service refuses on its own too, with a 422 rather than a crash.
      await refused(promos.create({ code: 'NOVALUE', type: 'absolute' } as Parameters<PromoService['create']>[0]), 'value', 'is required when the type changes');
      await refused(coupon({ periods: ['1M', '1Q'] }), 'periods', 'holds "1Q", which is not a period code');
      await refused(coupon({ products: [pro, 999_999] }), 'products', 'holds 999999, which is not a product');
      await expect(coupon({ start_at: 'tomorrow' })).rejects.toMatchObject({ code: 422, message: expect.stringContaining('"start_at"') });
      await expect(coupon({ end_at: 'soon' })).rejects.toMatchObject({ code: 422, message: expect.stringContaining('"end_at"') });
      await refused(coupon({ start_at: '2030-01-01T00:00:00Z', end_at: '2030-01-01T00:00:00Z' }), 'end_at', 'must be after start_at');
      await refused(coupon({ start_at: '2030-01-01T00:00:01Z', end_at: '2030-01-01T00:00:00Z' }), 'end_at', 'must be after start_at');
      // One second is a window.
      const narrow = await coupon({ start_at: '2030-01-01T00:00:00Z', end_at: '2030-01-01T00:00:01Z' });
      expect(await promos.get(narrow)).toMatchObject({ start_at: '2030-01-01T00:00:00Z', end_at: '2030-01-01T00:00:01Z' });
    });

    it('answers 409 for a code taken in any case, and passes any other database failure on unchanged', async () => {
      const taken = await coupon();
      const code = await codeOf(taken);
      await expect(coupon({ code: code.toLowerCase() })).rejects.toMatchObject({ code: 409, status: 409, message: 'A coupon with this code already exists' });
      const second = await coupon();
      await expect(promos.update(second, { code })).rejects.toMatchObject({ code: 409, message: 'A coupon with this code already exists' });
      // A failure that is not a duplicate (here a trigger refusing one code) must not be reported as one.
      await refuseCode(t, 'REFUSED');
      await expect(coupon({ code: 'refused' })).rejects.toThrow('refused by a test trigger');
      await expect(promos.update(second, { code: 'refused' })).rejects.toThrow('refused by a test trigger');
    });

    it('answers 404 for an unknown coupon, and for a deleted one', async () => {
      const notFound = { code: 404, status: 404, message: 'Coupon not found' };
      await expect(promos.get(999_999)).rejects.toMatchObject(notFound);
      await expect(promos.update(999_999, { value: '1' })).rejects.toMatchObject(notFound);
      await expect(promos.delete(999_999)).rejects.toMatchObject(notFound);
      const id = await coupon();
      await promos.delete(id);
      await expect(promos.get(id)).rejects.toMatchObject(notFound);
    });

    it('lists newest first, matching a search to a whole code in any case, and an empty search to all', async () => {
      const first = await coupon();
      const second = await coupon();
      const all = await promos.list({ per_page: 100 });
      expect(all.total).toBeGreaterThanOrEqual(2);
      expect(all.list.slice(0, 2).map((p) => p.id)).toEqual([second, first]);
      expect((await promos.list({ search: '', per_page: 100 })).total).toBe(all.total);
      const code = await codeOf(first);
      expect((await promos.list({ search: code.toLowerCase() })).list.map((p) => p.id)).toEqual([first]);
      // Part of a code matches nothing (codes here are C<number>; no code is a bare number).
      expect((await promos.list({ search: code.slice(1) })).total).toBe(0);
      expect((await promos.list({ per_page: 1, page: 2 })).list.map((p) => p.id)).toEqual([first]);
    });
  });

  describe('updating', () => {
    it('changes only the fields given', async () => {
      const id = await coupon({ value: '20', products: [pro], periods: ['1M'], max_uses: 5, once_per_client: true, recurring: true, end_at: '2030-01-01T00:00:00Z' });
      await promos.update(id, { value: '7.5' });
      expect(await promos.get(id)).toMatchObject({
        type: 'percentage',
        value: '7.5',
        products: [pro],
        periods: ['1M'],
        max_uses: 5,
        once_per_client: true,
        recurring: true,
        active: true,
        end_at: '2030-01-01T00:00:00Z',
      });
      await promos.update(id, { once_per_client: false, recurring: false, active: false });
      expect(await promos.get(id)).toMatchObject({ once_per_client: false, recurring: false, active: false, value: '7.5' });
    });

    it('takes empty lists and 0 uses as "no restriction", and empty dates as none', async () => {
      const id = await coupon({ products: [pro], periods: ['1M'], max_uses: 5, start_at: '2030-01-01T00:00:00Z', end_at: '2030-02-01T00:00:00Z' });
      await promos.update(id, { products: [], periods: [], max_uses: 0, start_at: '', end_at: '' });
      expect(await promos.get(id)).toMatchObject({ products: null, periods: null, max_uses: null, start_at: null, end_at: null });
      // Unrestricted again: it applies to another product in another period.
      expect((await promos.applicable(t.services.db, await codeOf(id), lines(other, '1Y'), null)).id).toBe(id);
    });

    it('needs a value when the type changes, and only then', async () => {
      const id = await coupon({ value: '15' });
      await promos.update(id, { type: 'percentage' });
      expect((await promos.get(id)).value).toBe('15');
      await refused(promos.update(id, { type: 'absolute' }), 'value', 'is required when the type changes');
      await promos.update(id, { type: 'absolute', value: '2.50' });
      expect(await promos.get(id)).toMatchObject({ type: 'absolute', value: '2.50' });
      // The new value is read as the stored type: an amount, not a percentage.
      await promos.update(id, { value: '3' });
      expect((await promos.get(id)).value).toBe('3.00');
    });

    it('checks a new start or end against the stored other end', async () => {
      const id = await coupon({ start_at: '2030-01-01T00:00:00Z', end_at: '2030-02-01T00:00:00Z' });
      await refused(promos.update(id, { end_at: '2029-12-31T00:00:00Z' }), 'end_at', 'must be after start_at');
      await refused(promos.update(id, { end_at: '2030-01-01T00:00:00Z' }), 'end_at', 'must be after start_at');
      await refused(promos.update(id, { start_at: '2030-03-01T00:00:00Z' }), 'end_at', 'must be after start_at');
      await promos.update(id, { start_at: '' });
      await promos.update(id, { end_at: '2029-12-31T00:00:00Z' });
      expect(await promos.get(id)).toMatchObject({ start_at: null, end_at: '2029-12-31T00:00:00Z' });
    });
  });

  describe('applying', () => {
    const db = () => t.services.db;

    it('finds a coupon by its code in any case, and refuses an unknown or malformed one', async () => {
      const id = await coupon();
      expect((await promos.applicable(db(), (await codeOf(id)).toLowerCase(), lines(), alice)).id).toBe(id);
      await refused(promos.applicable(db(), 'NO-SUCH-CODE', lines(), alice), 'promocode', 'is not a known coupon');
      await refused(promos.applicable(db(), 'no such code!', lines(), alice), 'promocode', 'is not a known coupon');
    });

    it('is valid from its start (inclusive) until its end (exclusive), to the second', async () => {
      const id = await coupon({ start_at: '2030-01-01T00:00:00Z', end_at: '2030-02-01T00:00:00Z' });
      const code = await codeOf(id);
      const at = (iso: string) => promos.applicable(db(), code, lines(), alice, new Date(iso));
      await refused(at('2029-12-31T23:59:59Z'), 'promocode', 'is not valid yet');
      expect((await at('2030-01-01T00:00:00Z')).id).toBe(id);
      expect((await at('2030-01-31T23:59:59Z')).id).toBe(id);
      await refused(at('2030-02-01T00:00:00Z'), 'promocode', 'has expired');
      // Only a start, or only an end.
      const from = await codeOf(await coupon({ start_at: '2030-01-01T00:00:00Z' }));
      expect((await promos.applicable(db(), from, lines(), alice, new Date('2031-01-01T00:00:00Z'))).code).toBe(from);
      const until = await codeOf(await coupon({ end_at: '2030-01-01T00:00:00Z' }));
      expect((await promos.applicable(db(), until, lines(), alice, new Date('2020-01-01T00:00:00Z'))).code).toBe(until);
    });

    it('refuses an inactive coupon, and one used up', async () => {
      await refused(promos.applicable(db(), await codeOf(await coupon({ active: false })), lines(), alice), 'promocode', 'is not active');
      const id = await coupon({ max_uses: 1 });
      expect((await promos.applicable(db(), await codeOf(id), lines(), alice)).id).toBe(id);
      await redeem(id, alice);
      await refused(promos.applicable(db(), await codeOf(id), lines(), bob), 'promocode', 'has been used up');
    });

    it('refuses a once-per-client coupon to the client who used it, not to others or to a guest', async () => {
      const once = await coupon({ once_per_client: true });
      await redeem(once, alice);
      const code = await codeOf(once);
      await refused(promos.applicable(db(), code, lines(), alice), 'promocode', 'has already been used by this account');
      expect((await promos.applicable(db(), code, lines(), bob)).id).toBe(once);
      expect((await promos.applicable(db(), code, lines(), null)).id).toBe(once);
      // A coupon that is not once-per-client can be used again by the same client.
      const again = await coupon();
      await redeem(again, alice);
      expect((await promos.applicable(db(), await codeOf(again), lines(), alice)).id).toBe(again);
    });

    it('refuses an empty cart, other products and other periods, saying which', async () => {
      const code = await codeOf(await coupon({ products: [pro], periods: ['1Y'] }));
      await refused(promos.applicable(db(), code, [], alice), 'promocode', 'cannot be applied to an empty cart');
      await refused(promos.applicable(db(), code, lines(other, '1Y'), alice), 'promocode', 'does not apply to the products in the cart');
      await refused(promos.applicable(db(), code, lines(pro, '1M'), alice), 'promocode', 'does not apply to the billing period chosen');
      expect((await promos.applicable(db(), code, [...lines(other, '1Y'), ...lines(pro, '1Y')], alice)).code).toBe(code);
    });
  });

  describe('redeeming', () => {
    it('counts one use and records it for the client', async () => {
      const id = await coupon();
      const row = await promos.requireRow(id);
      await inTransaction(t.services.db, (trx) => promos.redeem(trx, row, alice, null, new Date('2026-05-01T10:00:00.789Z')));
      expect(await usedCount(id)).toBe(1);
      const uses = await t.services.db.selectFrom('promo_uses').select(['client_id', 'invoice_id', 'created_at']).where('promo_id', '=', id).execute();
      expect(uses).toEqual([{ client_id: alice, invoice_id: null, created_at: '2026-05-01T10:00:00Z' }]);
      // Not once-per-client: the same client again is a second use.
      await redeem(id, alice);
      expect(await usedCount(id)).toBe(2);
    });

    it('refuses past max_uses and for an inactive coupon, counting nothing', async () => {
      const id = await coupon({ max_uses: 1 });
      await redeem(id, alice);
      await refused(redeem(id, bob), 'promocode', 'has been used up');
      expect(await usedCount(id)).toBe(1);
      const off = await coupon({ active: false });
      await refused(redeem(off, alice), 'promocode', 'has been used up');
      expect(await usedCount(off)).toBe(0);
    });

    it('refuses a once-per-client coupon the second time, and the rollback gives the use back', async () => {
      const id = await coupon({ once_per_client: true, max_uses: 10 });
      await redeem(id, alice);
      await refused(redeem(id, alice), 'promocode', 'has already been used by this account');
      expect(await usedCount(id)).toBe(1);
      await redeem(id, bob);
      expect(await usedCount(id)).toBe(2);
    });
  });

  describe('renewals', () => {
    const line = (productId: number): DiscountableLine => ({ productId, period: '1M', total: 1000 });

    it('discounts a renewal with a recurring coupon that covers it', async () => {
      const id = await coupon({ value: '30', recurring: true });
      expect(await promos.renewalDiscount(t.services.db, id, line(pro))).toEqual({ amount: 300, code: await codeOf(id) });
    });

    it('does not discount with a one-time coupon, a deleted one, or one that does not cover the line', async () => {
      expect(await promos.renewalDiscount(t.services.db, await coupon({ value: '30' }), line(pro))).toBeNull();
      const gone = await coupon({ value: '30', recurring: true });
      await promos.delete(gone);
      expect(await promos.renewalDiscount(t.services.db, gone, line(pro))).toBeNull();
      const elsewhere = await coupon({ value: '30', recurring: true, products: [other] });
      expect(await promos.renewalDiscount(t.services.db, elsewhere, line(pro))).toBeNull();
    });
  });
});

/** A trigger that makes the database refuse to store a coupon with this code (a failure that is not a duplicate). */
async function refuseCode(t: TestApp, code: string): Promise<void> {
  const db = t.services.db;
  if (t.services.dialect === 'postgres') {
    await sql.raw(`CREATE FUNCTION refuse_coupon() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by a test trigger'; END $$`).execute(db);
    await sql.raw(`CREATE TRIGGER refuse_coupon BEFORE INSERT OR UPDATE ON promos FOR EACH ROW WHEN (NEW.code = '${code}') EXECUTE FUNCTION refuse_coupon()`).execute(db);
    return;
  }
  for (const event of ['INSERT', 'UPDATE']) {
    await sql.raw(`CREATE TRIGGER refuse_coupon_${event} BEFORE ${event} ON promos WHEN NEW.code = '${code}' BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`).execute(db);
  }
}
