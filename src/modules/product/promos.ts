// Coupons (CONTRACT §8, admin/product/promo_*): a code worth a percentage or a fixed amount off, optionally only for
// some products and periods, within dates, a number of uses in all and once per client, and optionally on renewals
// too. The only writer of `promos` and `promo_uses`. A use is counted at checkout, in the checkout's transaction, by
// one conditional UPDATE (`used < max_uses`): concurrent checkouts cannot overspend a coupon, and a checkout that
// fails gives its use back with the rollback.
import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database } from '../../db/schema.ts';
import type { PromoTable, PromoType } from './tables.ts';
import { errors } from '../../platform/errors.ts';
import type { Money } from '../../lib/money.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { parsePeriod } from '../../lib/periods.ts';
import { formatRate, parseRate, percentOf } from '../../lib/rates.ts';
import { isoSeconds, nowIso } from '../../lib/time.ts';
import { parseExpiry } from '../order/expiry.ts';

export type PromoRow = Selectable<PromoTable>;

export interface PromoRecord {
  id: number;
  code: string;
  type: PromoType;
  /** Percent ("10", "12.5") or an amount ("5.00"). */
  value: string;
  products: number[] | null;
  periods: string[] | null;
  max_uses: number | null;
  used: number;
  once_per_client: boolean;
  recurring: boolean;
  active: boolean;
  start_at: string | null;
  end_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface PromoInput {
  code?: string | undefined;
  type?: PromoType | undefined;
  value?: string | number | undefined;
  products?: number[] | undefined;
  periods?: string[] | undefined;
  max_uses?: number | undefined;
  once_per_client?: boolean | undefined;
  recurring?: boolean | undefined;
  active?: boolean | undefined;
  start_at?: string | undefined;
  end_at?: string | undefined;
}

/** A line a coupon may discount: its product, period and total in minor units. */
export interface DiscountableLine {
  productId: number;
  period: string | null;
  total: number;
}

const CODE = /^[A-Za-z0-9_-]{1,64}$/;

function numbers(text: string | null): number[] | null {
  return text === null ? null : (JSON.parse(text) as number[]);
}

function strings(text: string | null): string[] | null {
  return text === null ? null : (JSON.parse(text) as string[]);
}

/** The lines the coupon covers: its products (all when none are named) and periods (all when none are named). */
function coveredLines(promo: PromoRow, lines: DiscountableLine[]): DiscountableLine[] {
  const products = numbers(promo.products);
  const periods = strings(promo.periods);
  return lines.filter((line) => (products === null || products.includes(line.productId)) && (periods === null || (line.period !== null && periods.includes(line.period))));
}

/** Whether the coupon covers a line of this product and period. */
export function covers(promo: Pick<PromoRow, 'products' | 'periods'>, productId: number, period: string | null): boolean {
  return coveredLines(promo as PromoRow, [{ productId, period, total: 0 }]).length === 1;
}

/**
 * What the coupon takes off these lines, in minor units: a percentage of the covered lines' sum rounded half up
 * once, or the fixed amount capped at that sum, so a discount is never negative nor more than what it applies to.
 */
export function discountOf(promo: Pick<PromoRow, 'type' | 'value' | 'products' | 'periods'>, lines: DiscountableLine[]): number {
  const base = coveredLines(promo as PromoRow, lines).reduce((sum, line) => sum + line.total, 0);
  return promo.type === 'percentage' ? Math.min(percentOf(base, promo.value), base) : Math.min(promo.value, base);
}

export function createPromoService({ db, money }: { db: Kysely<Database>; money: Money }) {
  function toRecord(row: PromoRow): PromoRecord {
    return {
      id: row.id,
      code: row.code,
      type: row.type,
      value: row.type === 'percentage' ? formatRate(row.value) : money.format(row.value),
      products: numbers(row.products),
      periods: strings(row.periods),
      max_uses: row.max_uses,
      used: row.used,
      once_per_client: row.once_per_client === 1,
      recurring: row.recurring === 1,
      active: row.active === 1,
      start_at: row.start_at,
      end_at: row.end_at,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  async function requireRow(id: number, trx: Kysely<Database> = db): Promise<PromoRow> {
    const row = await trx.selectFrom('promos').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Coupon');
    return row;
  }

  /** The stored columns for the given fields, checked against the coupon's (new or current) type. */
  function valuesOf(input: PromoInput, current: PromoRow | null): Partial<PromoRow> {
    const out: Partial<PromoRow> = {};
    if (input.code !== undefined) {
      if (!CODE.test(input.code)) throw errors.invalid('code', 'must be 1-64 letters, digits, - or _');
      out.code = input.code.toUpperCase();
    }
    const type = input.type ?? current?.type;
    if (input.type !== undefined) out.type = input.type;
    if (input.value !== undefined || (input.type !== undefined && input.type !== current?.type)) {
      if (input.value === undefined) throw errors.invalid('value', 'is required when the type changes');
      out.value = type === 'percentage' ? parseRate(input.value, 'value') : money.parse(input.value, 'value');
      if (out.value === 0) throw errors.invalid('value', 'must be more than 0');
    }
    if (input.products !== undefined) out.products = input.products.length === 0 ? null : JSON.stringify([...new Set(input.products)]);
    if (input.periods !== undefined) {
      for (const period of input.periods) if (parsePeriod(period) === null) throw errors.invalid('periods', `holds "${period}", which is not a period code`);
      out.periods = input.periods.length === 0 ? null : JSON.stringify([...new Set(input.periods)]);
    }
    if (input.max_uses !== undefined) out.max_uses = input.max_uses === 0 ? null : input.max_uses;
    if (input.once_per_client !== undefined) out.once_per_client = input.once_per_client ? 1 : 0;
    if (input.recurring !== undefined) out.recurring = input.recurring ? 1 : 0;
    if (input.active !== undefined) out.active = input.active ? 1 : 0;
    if (input.start_at !== undefined) out.start_at = input.start_at === '' ? null : parseExpiry(input.start_at, 'start_at');
    if (input.end_at !== undefined) out.end_at = input.end_at === '' ? null : parseExpiry(input.end_at, 'end_at');
    const start = out.start_at !== undefined ? out.start_at : (current?.start_at ?? null);
    const end = out.end_at !== undefined ? out.end_at : (current?.end_at ?? null);
    if (start !== null && end !== null && end <= start) throw errors.invalid('end_at', 'must be after start_at');
    return out;
  }

  async function checkProducts(products: number[] | undefined): Promise<void> {
    if (products === undefined || products.length === 0) return;
    const found = await db.selectFrom('products').select('id').where('id', 'in', products).execute();
    const known = new Set(found.map((row) => row.id));
    const missing = products.find((id) => !known.has(id));
    if (missing !== undefined) throw errors.invalid('products', `holds ${missing}, which is not a product`);
  }

  const duplicate = (error: unknown): never => {
    if (isUniqueViolation(error)) throw errors.conflict('A coupon with this code already exists');
    throw error;
  };

  /** Why the coupon cannot be used now (422 naming `promocode`), or nothing. */
  function assertUsable(row: PromoRow, now: Date): void {
    const at = isoSeconds(now);
    if (row.active !== 1) throw errors.invalid('promocode', 'is not active');
    if (row.start_at !== null && at < row.start_at) throw errors.invalid('promocode', 'is not valid yet');
    if (row.end_at !== null && at >= row.end_at) throw errors.invalid('promocode', 'has expired');
    if (row.max_uses !== null && row.used >= row.max_uses) throw errors.invalid('promocode', 'has been used up');
  }

  /** Why the coupon does not apply to these lines (422 naming `promocode`), or nothing. */
  function assertApplies(row: PromoRow, lines: DiscountableLine[]): void {
    if (lines.length === 0) throw errors.invalid('promocode', 'cannot be applied to an empty cart');
    const products = numbers(row.products);
    const forProducts = products === null ? lines : lines.filter((line) => products.includes(line.productId));
    if (forProducts.length === 0) throw errors.invalid('promocode', 'does not apply to the products in the cart');
    if (coveredLines(row, lines).length === 0) throw errors.invalid('promocode', 'does not apply to the billing period chosen');
  }

  async function usedBy(trx: Kysely<Database>, promoId: number, clientId: number): Promise<boolean> {
    return (await trx.selectFrom('promo_uses').select('id').where('promo_id', '=', promoId).where('client_id', '=', clientId).executeTakeFirst()) !== undefined;
  }

  return {
    toRecord,
    requireRow,

    async create(input: PromoInput & { code: string; type: PromoType; value: string | number }): Promise<number> {
      const values = valuesOf(input, null);
      await checkProducts(input.products);
      const now = nowIso();
      const row = await db
        .insertInto('promos')
        .values({
          code: values.code!,
          type: values.type!,
          value: values.value!,
          products: values.products ?? null,
          periods: values.periods ?? null,
          max_uses: values.max_uses ?? null,
          once_per_client: values.once_per_client ?? 0,
          recurring: values.recurring ?? 0,
          active: values.active ?? 1,
          start_at: values.start_at ?? null,
          end_at: values.end_at ?? null,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
        .catch(duplicate);
      return row.id;
    },

    async update(id: number, input: PromoInput): Promise<void> {
      const current = await requireRow(id);
      const values = valuesOf(input, current);
      await checkProducts(input.products);
      await db.updateTable('promos').set({ ...values, updated_at: nowIso() }).where('id', '=', id).execute().catch(duplicate);
    },

    async delete(id: number): Promise<void> {
      await requireRow(id);
      await db.deleteFrom('promos').where('id', '=', id).execute();
    },

    async get(id: number): Promise<PromoRecord> {
      return toRecord(await requireRow(id));
    },

    async list(filters: { search?: string | undefined; page?: number | undefined; per_page?: number | undefined }): Promise<Page<PromoRecord>> {
      const request = pageRequest(filters);
      let query = db.selectFrom('promos');
      if (filters.search !== undefined && filters.search !== '') query = query.where('code', '=', filters.search.toUpperCase());
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.selectAll().orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, rows.map(toRecord));
    },

    /**
     * The coupon with this code if it can be applied to these lines now (by `clientId`, when known); otherwise a
     * 422 naming `promocode` and why: unknown, not active, not yet valid, expired, used up, already used by this
     * client, or not for these products or periods.
     */
    async applicable(trx: Kysely<Database>, code: string, lines: DiscountableLine[], clientId: number | null, now = new Date()): Promise<PromoRow> {
      const row = CODE.test(code) ? await trx.selectFrom('promos').selectAll().where('code', '=', code.toUpperCase()).executeTakeFirst() : undefined;
      if (row === undefined) throw errors.invalid('promocode', 'is not a known coupon');
      assertUsable(row, now);
      if (clientId !== null && row.once_per_client === 1 && (await usedBy(trx, row.id, clientId))) {
        throw errors.invalid('promocode', 'has already been used by this account');
      }
      assertApplies(row, lines);
      return row;
    },

    /**
     * Counts one use of the coupon for `clientId` inside the checkout's transaction. The conditional UPDATE is the
     * guard: of concurrent checkouts past `max_uses`, the late ones update nothing and get 422 "used up" (their
     * transaction rolls back, so nothing else is counted). It also locks the row on PostgreSQL, which serialises
     * the once-per-client check behind it.
     */
    async redeem(trx: Kysely<Database>, promo: PromoRow, clientId: number, invoiceId: number | null, now = new Date()): Promise<void> {
      const result = await trx
        .updateTable('promos')
        .set((eb) => ({ used: eb('used', '+', 1) }))
        .where('id', '=', promo.id)
        .where('active', '=', 1)
        .where((eb) => eb.or([eb('max_uses', 'is', null), eb('used', '<', eb.ref('max_uses'))]))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) throw errors.invalid('promocode', 'has been used up');
      if (promo.once_per_client === 1 && (await usedBy(trx, promo.id, clientId))) {
        throw errors.invalid('promocode', 'has already been used by this account');
      }
      await trx.insertInto('promo_uses').values({ promo_id: promo.id, client_id: clientId, invoice_id: invoiceId, created_at: isoSeconds(now) }).execute();
    },

    /** A recurring coupon's discount on a renewal line (0 when the coupon is gone or not recurring). */
    /** `valueIn`: an absolute coupon's value (set in the default currency) in the renewal's currency. */
    async renewalDiscount(trx: Kysely<Database>, promoId: number, line: DiscountableLine, valueIn: (value: number) => number = (value) => value): Promise<{ amount: number; code: string } | null> {
      const row = await trx.selectFrom('promos').selectAll().where('id', '=', promoId).executeTakeFirst();
      if (row === undefined || row.recurring !== 1) return null;
      const amount = discountOf(row.type === 'absolute' ? { ...row, value: valueIn(row.value) } : row, [line]);
      return amount > 0 ? { amount, code: row.code } : null;
    },
  };
}

export type PromoService = ReturnType<typeof createPromoService>;
