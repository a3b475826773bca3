// The stats module (issue 25): FOSSBilling's Stats actions and the admin dashboard's figures, read from the other
// modules' tables with grouped SQL (no table of its own; migration 040 adds the indexes the sums read). Read only.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { DialectName } from '../../db/database.ts';
import { errors } from '../../platform/errors.ts';
import { isoSeconds } from '../../lib/time.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { csvLine } from '../export/csv.ts';
import { defaultCurrencyOf, type StatsSelling } from './convert.ts';
import { dashboardFigures } from './dashboard.ts';
import { clientCountries, incomeVsRefunds, ordersStatuses, productSummary, salesCountries, summary, summaryIncome } from './fossbilling.ts';
import { FIGURE_LISTS, isFigure, type FigureName } from './figure-lists.ts';
import { amountOf, nameOf, type Row } from './list-types.ts';
import { presentDashboard, type DashboardAnswer } from './present.ts';
import { rangeOf } from './range.ts';

export interface StatsDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  /** The currencies as sales use them: overage priced as the close prices it, amounts converted at stored rates. */
  selling: StatsSelling;
}

export interface RangeParams {
  from?: string | undefined;
  to?: string | undefined;
}

/** Rows a CSV export reads per query. */
const CSV_BATCH = 500;

export function createStatsService({ db, dialect, selling }: StatsDeps) {
  function figureOf(figure: string): FigureName {
    if (!isFigure(figure)) throw errors.invalid('figure', `must be one of ${Object.keys(FIGURE_LISTS).toSorted().join(', ')}`);
    return figure;
  }

  return {
    async dashboard(params: RangeParams, now = new Date()): Promise<DashboardAnswer> {
      const figures = await dashboardFigures(db, dialect, selling, rangeOf(params, now), now);
      const ids = figures.top_customers.map((row) => row.client_id);
      const clients = ids.length === 0 ? [] : await db.selectFrom('clients').select(['id', 'email', 'first_name', 'last_name']).where('id', 'in', ids).execute();
      return presentDashboard(figures, new Map(clients.map((client) => [client.id, { email: client.email, name: nameOf(client.first_name, client.last_name) }])));
    },

    /** One page of the records behind a figure, for the range; `columns` names the row keys in order. */
    async figureList(params: RangeParams & { figure: string; page?: number | undefined; per_page?: number | undefined }, now = new Date()): Promise<Page<Row> & { figure: string; columns: readonly string[] }> {
      const figure = figureOf(params.figure);
      const range = rangeOf(params, now);
      const request = pageRequest(params);
      const list = FIGURE_LISTS[figure];
      const { rows, total } = await list.read({ db, dialect, selling, into: await defaultCurrencyOf(db, selling), range: range.current, now: isoSeconds(now) }, request.offset, request.perPage);
      return { ...toPage(request, total, rows), figure, columns: list.columns };
    },

    /** The CSV of a figure's records: checks the parameters at once (422), then reads the rows lazily in batches. */
    csv(figure: string, params: RangeParams, now = new Date()): AsyncGenerator<string> {
      const list = FIGURE_LISTS[figureOf(figure)];
      const range = rangeOf(params, now);
      return (async function* rows() {
        const context = { db, dialect, selling, into: await defaultCurrencyOf(db, selling), range: range.current, now: isoSeconds(now) };
        yield csvLine([...list.columns]);
        for (let offset = 0; ; offset += CSV_BATCH) {
          const { rows: batch } = await list.read(context, offset, CSV_BATCH);
          if (batch.length > 0) yield batch.map((row) => csvLine(list.columns.map((column) => row[column] ?? null))).join('');
          if (batch.length < CSV_BATCH) return;
        }
      })();
    },

    getSummary: (now = new Date()) => summary(db, now),

    async getSummaryIncome(now = new Date()) {
      const into = await defaultCurrencyOf(db, selling);
      const income = await summaryIncome(db, now, into);
      return Object.fromEntries(Object.entries(income).map(([key, value]) => [key, amountOf(value, into.code)])) as Record<keyof typeof income, string>;
    },

    getOrdersStatuses: () => ordersStatuses(db),
    getProductSummary: () => productSummary(db),

    async getIncomeVsRefunds() {
      const into = await defaultCurrencyOf(db, selling);
      const { income, refund } = await incomeVsRefunds(db, into);
      return { refund: amountOf(refund, into.code), income: amountOf(income, into.code) };
    },

    clientCountries: (limit: number) => clientCountries(db, limit),
    salesCountries: (limit: number) => salesCountries(db, dialect, limit),
  };
}

export type StatsService = ReturnType<typeof createStatsService>;
