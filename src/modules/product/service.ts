// Products: the catalogue staff sell from. The only writer of `products`.
import { sql, type Kysely, type Selectable } from 'kysely';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database } from '../../db/schema.ts';
import type { ProductTable, ProductStatus, SetupMode } from './tables.ts';
import { errors } from '../../platform/errors.ts';
import { moneyFor, precisionOf, type Money } from '../../lib/money.ts';
import type { SaleCurrency, Selling } from '../currency/selling.ts';
import { parseCurrencyPrices, pricingIn, viewCurrencyPrices, type CurrencyPriceView } from './currency-prices.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { nowIso } from '../../lib/time.ts';
import { FREE_PRICING, parsePricing, readPricing, viewPricing, type Pricing, type PricingView } from './pricing.ts';
import type { ProductType } from './product-type.ts';
import type { ProductTypeRegistry } from './types-registry.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { withPublicTrial, withTrial } from './trial-config.ts';

export type ProductRow = Selectable<ProductTable>;

export interface ProductRecord {
  id: number;
  title: string;
  slug: string;
  description: string | null;
  type: string;
  status: ProductStatus;
  hidden: boolean;
  setup: SetupMode;
  pricing: PricingView & { prices: Record<string, CurrencyPriceView> };
  config: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface PublicProduct {
  id: number;
  title: string;
  slug: string;
  description: string | null;
  type: string;
  pricing: PricingView;
  config: Record<string, unknown>;
  /** The currency `pricing` is in (issue 26): the one asked for, else the default. */
  currency: string;
}

export interface ProductUpdate {
  title?: string | undefined;
  slug?: string | undefined;
  description?: string | undefined;
  status?: ProductStatus | undefined;
  hidden?: boolean | undefined;
  setup?: SetupMode | undefined;
  pricing?: unknown;
  config?: Record<string, unknown> | undefined;
}

export interface ProductFilters {
  type?: string | undefined;
  status?: ProductStatus | undefined;
  search?: string | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

export interface ProductServiceDeps {
  db: Kysely<Database>;
  productTypes: ProductTypeRegistry;
  money: Money;
  /** The instance's currencies: prices per currency are checked against them and shown in them. */
  selling: Pick<Selling, 'describe'>;
}

const MAX_CONFIG_BYTES = 65_536;
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export function slugify(title: string): string {
  const slug = title
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 200)
    .replace(/-+$/, '');
  return slug === '' ? 'product' : slug;
}

export function readConfig(json: string): Record<string, unknown> {
  const parsed = JSON.parse(json) as unknown;
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function createProductService({ db, productTypes, money, selling }: ProductServiceDeps) {
  function typeOf(row: ProductRow): ProductType {
    const type = productTypes.get(row.type);
    if (type === undefined) throw new Error(`Product ${row.id} has the unregistered type "${row.type}"`);
    return type;
  }

  function toRecord(row: ProductRow): ProductRecord {
    return {
      id: row.id,
      title: row.title,
      slug: row.slug,
      description: row.description,
      type: row.type,
      status: row.status,
      hidden: row.hidden === 1,
      setup: row.setup,
      pricing: { ...viewPricing(readPricing(row.pricing), money), prices: viewCurrencyPrices(readPricing(row.pricing).prices, precisionOf) },
      config: readConfig(row.config),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  /** A catalogue product with its prices in `sale`'s currency (its own prices there, else the default ones converted). */
  function toPublic(row: ProductRow, sale: SaleCurrency): PublicProduct {
    return {
      id: row.id,
      title: row.title,
      slug: row.slug,
      description: row.description,
      type: row.type,
      pricing: viewPricing(pricingIn(readPricing(row.pricing), sale), moneyFor(sale.code), true),
      config: withPublicTrial(typeOf(row).publicConfig(readConfig(row.config)), readConfig(row.config)),
      currency: sale.code,
    };
  }

  function normalizeConfig(row: { type: string }, config: Record<string, unknown>): string {
    if (!isPlainObject(config)) throw errors.invalid('config', 'must be an object');
    const normalized = withTrial(productTypes.require(row.type).normalizeConfig(config), config.trial);
    const json = JSON.stringify(normalized);
    if (json.length > MAX_CONFIG_BYTES) throw errors.invalid('config', `must be at most ${MAX_CONFIG_BYTES} bytes as JSON`);
    return json;
  }

  async function requireRow(id: number, trx: Kysely<Database> = db): Promise<ProductRow> {
    const row = await trx.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Product');
    return row;
  }

  async function uniqueSlug(base: string): Promise<string> {
    const taken = new Set(
      (await db.selectFrom('products').select('slug').where('slug', 'like', `${base}%`).execute()).map((row) => row.slug),
    );
    if (!taken.has(base)) return base;
    for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
  }

  const conflictOnSlug = (error: unknown): never => {
    if (isUniqueViolation(error)) throw errors.conflict('Another product has this slug');
    throw error;
  };

  /** The default prices, then the own prices per currency checked against them (the map given replaces the stored one). */
  async function parseAllPricing(input: unknown, current: Pricing): Promise<Pricing> {
    const pricing = parsePricing(input, current, money);
    const given = (input as { prices?: unknown }).prices;
    if (given === undefined) return pricing;
    const prices = await parseCurrencyPrices(given, pricing, (code, param) => selling.describe(db, code, param));
    return { ...pricing, prices };
  }

  /** The currency a catalogue read asks for (`currency`), else the default; 422 for one the instance lacks. */
  const saleOf = async (currency: string | undefined): Promise<SaleCurrency> => selling.describe(db, currency);

  return {
    typeOf,
    requireRow,
    pricingOf: (row: ProductRow): Pricing => readPricing(row.pricing),
    configOf: (row: ProductRow): Record<string, unknown> => readConfig(row.config),

    async prepare(title: string, type: string): Promise<number> {
      const productType = productTypes.require(type);
      if (title.trim() === '') throw errors.invalid('title', 'must not be empty');
      const now = nowIso();
      const row = await db
        .insertInto('products')
        .values({
          title: title.trim(),
          slug: await uniqueSlug(slugify(title)),
          description: null,
          type: productType.code,
          status: 'disabled',
          hidden: 0,
          setup: 'after_payment',
          pricing: JSON.stringify(FREE_PRICING),
          config: JSON.stringify(productType.normalizeConfig({})),
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
        .catch(conflictOnSlug);
      return row.id;
    },

    async update(id: number, fields: ProductUpdate): Promise<void> {
      const row = await requireRow(id);
      if (fields.title !== undefined && fields.title.trim() === '') throw errors.invalid('title', 'must not be empty');
      if (fields.slug !== undefined && !SLUG.test(fields.slug)) {
        throw errors.invalid('slug', 'must be lower-case letters, digits and single dashes');
      }
      const pricing = fields.pricing === undefined ? undefined : await parseAllPricing(fields.pricing, readPricing(row.pricing));
      const config = fields.config === undefined ? undefined : normalizeConfig(row, { ...readConfig(row.config), ...fields.config });
      await db
        .updateTable('products')
        .set({
          ...(fields.title !== undefined && { title: fields.title.trim() }),
          ...(fields.slug !== undefined && { slug: fields.slug }),
          ...(fields.description !== undefined && { description: fields.description === '' ? null : fields.description }),
          ...(fields.status !== undefined && { status: fields.status }),
          ...(fields.hidden !== undefined && { hidden: fields.hidden ? 1 : 0 }),
          ...(fields.setup !== undefined && { setup: fields.setup }),
          ...(pricing !== undefined && { pricing: JSON.stringify(pricing) }),
          ...(config !== undefined && { config }),
          updated_at: nowIso(),
        })
        .where('id', '=', id)
        .execute()
        .catch(conflictOnSlug);
    },

    async updateConfig(id: number, config: Record<string, unknown>): Promise<void> {
      const row = await requireRow(id);
      await db.updateTable('products').set({ config: normalizeConfig(row, config), updated_at: nowIso() }).where('id', '=', id).execute();
    },

    async get(id: number): Promise<ProductRecord> {
      return toRecord(await requireRow(id));
    },

    async list(filters: ProductFilters): Promise<Page<ProductRecord>> {
      const request = pageRequest(filters);
      let query = db.selectFrom('products');
      if (filters.type !== undefined) query = query.where('type', '=', filters.type);
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      if (filters.search !== undefined && filters.search !== '') {
        // `%` and `_` typed by staff are literal characters, not wildcards (SQLite has no default LIKE escape).
        const pattern = `%${filters.search.toLowerCase().replace(/[\\%_]/g, '\\$&')}%`;
        query = query.where((eb) =>
          eb.or([sql<boolean>`lower(${eb.ref('title')}) like ${pattern} escape '\\'`, sql<boolean>`${eb.ref('slug')} like ${pattern} escape '\\'`]),
        );
      }
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.selectAll().orderBy('id').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, rows.map(toRecord));
    },

    async delete(id: number): Promise<void> {
      await inTransaction(db, async (trx) => {
        await requireRow(id, trx);
        const used = await trx.selectFrom('orders').select('id').where('product_id', '=', id).limit(1).executeTakeFirst();
        if (used !== undefined) throw errors.conflict('The product has orders; disable it instead');
        // Cart items of the product go with it (ON DELETE CASCADE).
        await trx.deleteFrom('products').where('id', '=', id).execute();
      });
    },

    /** The catalogue: enabled products, hidden ones left out. */
    async publicList(filters: { page?: number | undefined; per_page?: number | undefined; currency?: string | undefined }): Promise<Page<PublicProduct>> {
      const request = pageRequest(filters);
      const sale = await saleOf(filters.currency);
      const query = db.selectFrom('products').where('status', '=', 'enabled').where('hidden', '=', 0);
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.selectAll().orderBy('id').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, rows.map((row) => toPublic(row, sale)));
    },

    /** Enabled, listed products of one type other than `exceptId` (client/order/upgradables). */
    async publicOfType(type: string, exceptId: number, sale: SaleCurrency): Promise<PublicProduct[]> {
      const rows = await db.selectFrom('products').selectAll().where('status', '=', 'enabled').where('hidden', '=', 0).where('type', '=', type).where('id', '!=', exceptId).orderBy('id').execute();
      return rows.map((row) => toPublic(row, sale));
    },

    /**
     * One catalogue product by id or slug: like the list, only enabled, not hidden ones (CONTRACT §6 products). A
     * hidden product can still be put in a cart by id, which is what a direct order link does.
     */
    async publicGet(key: { id?: number | undefined; slug?: string | undefined; currency?: string | undefined }): Promise<PublicProduct> {
      if (key.id === undefined && key.slug === undefined) throw errors.invalid('id', 'is required (or slug)');
      let query = db.selectFrom('products').selectAll().where('status', '=', 'enabled').where('hidden', '=', 0);
      query = key.id !== undefined ? query.where('id', '=', key.id) : query.where('slug', '=', key.slug!);
      const row = await query.executeTakeFirst();
      if (row === undefined) throw errors.notFound('Product');
      return toPublic(row, await saleOf(key.currency));
    },
  };
}

export type ProductService = ReturnType<typeof createProductService>;
