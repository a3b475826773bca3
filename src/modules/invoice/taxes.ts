// Tax rules (CONTRACT §8, admin/invoice/tax_*): a name, a rate, and optionally the buyer country and state it applies
// to. The only writer of `taxes`. Prices are tax-exclusive; an invoice takes the rule for the buyer's country and
// state, else its country's, else the rule with no country, else none; tax-exempt clients pay none.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { TaxTable } from './tables.ts';
import { errors } from '../../platform/errors.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { formatRate, parseRate } from '../../lib/rates.ts';
import { nowIso } from '../../lib/time.ts';
import { checkCountry } from '../system/countries.ts';

type TaxRow = Selectable<TaxTable>;

export interface TaxRecord {
  id: number;
  name: string;
  /** Percent as a decimal string: "20", "7.25". */
  rate: string;
  country: string | null;
  state: string | null;
  created_at: string;
  updated_at: string;
}

export interface TaxInput {
  name?: string | undefined;
  rate?: string | number | undefined;
  country?: string | undefined;
  state?: string | undefined;
}

/** The rule an invoice applies: name and rate in thousandths of a percent. */
export interface AppliedTax {
  name: string;
  rate: number;
}

function toRecord(row: TaxRow): TaxRecord {
  return { id: row.id, name: row.name, rate: formatRate(row.rate), country: row.country, state: row.state, created_at: row.created_at, updated_at: row.updated_at };
}

/** `euRulesOn`: whether the EU VAT rules apply (issue 26): then tax applies even without a manual rule. */
export function createTaxService({ db, euRulesOn = async () => false }: { db: Kysely<Database>; euRulesOn?: (trx: Kysely<Database>) => Promise<boolean> }) {
  async function requireRow(id: number): Promise<TaxRow> {
    const row = await db.selectFrom('taxes').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Tax rule');
    return row;
  }

  /** The stored values of the given fields ('' clears country and state). */
  function valuesOf(input: TaxInput): Partial<TaxRow> {
    const out: Partial<TaxRow> = {};
    if (input.name !== undefined) {
      if (input.name.trim() === '') throw errors.invalid('name', 'must not be empty');
      out.name = input.name.trim();
    }
    if (input.rate !== undefined) out.rate = parseRate(input.rate, 'rate');
    if (input.country !== undefined) out.country = input.country === '' ? null : checkCountry(input.country);
    if (input.state !== undefined) out.state = input.state.trim() === '' ? null : input.state.trim();
    return out;
  }

  /** One rule per place: a second rule for the same country and state would make the choice arbitrary (409). */
  async function ensureUnique(country: string | null, state: string | null, exceptId?: number): Promise<void> {
    let query = db
      .selectFrom('taxes')
      .select('id')
      .where('country', country === null ? 'is' : '=', country)
      .where('state', state === null ? 'is' : '=', state);
    if (exceptId !== undefined) query = query.where('id', '!=', exceptId);
    if ((await query.executeTakeFirst()) !== undefined) throw errors.conflict('A tax rule for this country and state already exists');
  }

  return {
    async create(input: TaxInput & { name: string; rate: string | number }): Promise<number> {
      const values = valuesOf(input);
      const country = values.country ?? null;
      const state = values.state ?? null;
      if (state !== null && country === null) throw errors.invalid('state', 'needs a country');
      await ensureUnique(country, state);
      const now = nowIso();
      const row = await db
        .insertInto('taxes')
        .values({ name: values.name!, rate: values.rate!, country, state, created_at: now, updated_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    },

    async update(id: number, input: TaxInput): Promise<void> {
      const row = await requireRow(id);
      const values = valuesOf(input);
      const next = { ...row, ...values };
      if (next.state !== null && next.country === null) throw errors.invalid('state', 'needs a country');
      if (values.country !== undefined || values.state !== undefined) await ensureUnique(next.country, next.state, id);
      await db.updateTable('taxes').set({ ...values, updated_at: nowIso() }).where('id', '=', id).execute();
    },

    async delete(id: number): Promise<void> {
      await requireRow(id);
      await db.deleteFrom('taxes').where('id', '=', id).execute();
    },

    async get(id: number): Promise<TaxRecord> {
      return toRecord(await requireRow(id));
    },

    async list(filters: { page?: number | undefined; per_page?: number | undefined }): Promise<Page<TaxRecord>> {
      const request = pageRequest(filters);
      const total = await db.selectFrom('taxes').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await db.selectFrom('taxes').selectAll().orderBy('id').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, rows.map(toRecord));
    },

    /** The rule for a buyer: country and state, else country, else no country, else none (null). */
    /** Whether any tax rule exists: then buyers must give their billing country before checkout (issue 21 item 8). */
    async anyRule(trx: Kysely<Database> = db): Promise<boolean> {
      if (await euRulesOn(trx)) return true;
      return (await trx.selectFrom('taxes').select('id').limit(1).executeTakeFirst()) !== undefined;
    },

    async forBuyer(trx: Kysely<Database>, country: string | null, state: string | null): Promise<AppliedTax | null> {
      const rows = await trx
        .selectFrom('taxes')
        .select(['name', 'rate', 'country', 'state'])
        .where((eb) => eb.or([eb('country', 'is', null), ...(country === null ? [] : [eb('country', '=', country)])]))
        .execute();
      const normalizedState = state?.trim().toLowerCase() ?? null;
      const rank = (row: (typeof rows)[number]): number => {
        if (row.country === null) return row.state === null ? 1 : 0;
        if (row.state === null) return 2;
        return normalizedState !== null && row.state.toLowerCase() === normalizedState ? 3 : 0;
      };
      const best = rows.map((row) => ({ row, score: rank(row) })).filter(({ score }) => score > 0).toSorted((a, b) => b.score - a.score)[0];
      return best === undefined ? null : { name: best.row.name, rate: best.row.rate };
    },
  };
}

export type TaxService = ReturnType<typeof createTaxService>;
