// stats: FOSSBilling's Stats admin actions with its names and shapes (get_summary, get_summary_income,
// get_orders_statuses, get_product_summary, get_income_vs_refunds, client_countries, sales_countries) and the admin
// home's figures (dashboard, dashboard_list). One permission, as FOSSBilling has it: stats.view.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { paginationParams } from '../../lib/paginator.ts';
import type { StatsService } from './service.ts';
import { FIGURE_NAMES } from './figure-lists.ts';
import {
  CountriesResult,
  DashboardResult,
  FigureListResult,
  IncomeVsRefundsResult,
  OrdersStatusesResult,
  ProductSummaryResult,
  SummaryIncomeResult,
  SummaryResult,
} from './results.ts';

/** The services this module's actions use. */
export interface StatsNeeds {
  stats: Pick<
    StatsService,
    'dashboard' | 'figureList' | 'getSummary' | 'getSummaryIncome' | 'getOrdersStatuses' | 'getProductSummary' | 'getIncomeVsRefunds' | 'clientCountries' | 'salesCountries'
  >;
}

export const STATS_PERMISSION = 'stats.view';

const { adminAction } = actionsFor<StatsNeeds>();

const Day = (what: string) => Type.Optional(Type.String({ maxLength: 10, description: `${what}, YYYY-MM-DD (UTC, inclusive)` }));
const rangeParams = { from: Day('First day of the range; default: 29 days before `to`'), to: Day('Last day of the range; default: today') };
const limitParams = { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'At most this many countries (default 10)' })) };
const Figure = Type.Union(FIGURE_NAMES.map((name) => Type.Literal(name)));

export const statsApi: ModuleApi<StatsNeeds> = {
  name: 'stats',
  admin: {
    dashboard: adminAction({
      params: Type.Object(rangeParams),
      permission: STATS_PERMISSION,
      summary:
        'The admin home’s figures for a range (default the last 30 days) and the range before it: MRR, ARR, net revenue, 12 months of revenue, usage and top-ups, new and churned customers, failed and recovered payments, cancellations scheduled, renewals due, projected overage, top customers; money per currency',
      result: DashboardResult,
      handler: (params, { services }) => services.stats.dashboard(params),
    }),
    dashboard_list: adminAction({
      params: Type.Object({ figure: Figure, ...rangeParams, ...paginationParams }),
      permission: STATS_PERMISSION,
      summary: 'The records behind one dashboard figure for the range (also as CSV at /api/admin/export/dashboard_<figure>.csv)',
      result: FigureListResult,
      handler: (params, { services }) => services.stats.figureList(params),
    }),
    get_summary: adminAction({
      params: Type.Object({}),
      permission: STATS_PERMISSION,
      summary: 'Clients, orders and invoices: in total, created today, yesterday, this month and last month (FOSSBilling’s keys; tickets are always 0)',
      result: SummaryResult,
      handler: (_params, { services }) => services.stats.getSummary(),
    }),
    get_summary_income: adminAction({
      params: Type.Object({}),
      permission: STATS_PERMISSION,
      summary: 'Net income (paid − refunds − credit notes) in total, today, yesterday, this month and last month, in the default currency',
      result: SummaryIncomeResult,
      handler: (_params, { services }) => services.stats.getSummaryIncome(),
    }),
    get_orders_statuses: adminAction({
      params: Type.Object({}),
      permission: STATS_PERMISSION,
      summary: 'Orders per status, every status named',
      result: OrdersStatusesResult,
      handler: (_params, { services }) => services.stats.getOrdersStatuses(),
    }),
    get_product_summary: adminAction({
      params: Type.Object({}),
      permission: STATS_PERMISSION,
      summary: 'Active orders per product, most first: [{id, title, orders}]',
      result: ProductSummaryResult,
      handler: (_params, { services }) => services.stats.getProductSummary(),
    }),
    get_income_vs_refunds: adminAction({
      params: Type.Object({}),
      permission: STATS_PERMISSION,
      summary: 'Everything paid (income) and everything given back (refund: refunds and credit notes), ever, in the default currency',
      result: IncomeVsRefundsResult,
      handler: (_params, { services }) => services.stats.getIncomeVsRefunds(),
    }),
    client_countries: adminAction({
      params: Type.Object(limitParams),
      permission: STATS_PERMISSION,
      summary: 'Clients per country, most first: {"DE": 12, …}',
      result: CountriesResult,
      handler: ({ limit }, { services }) => services.stats.clientCountries(limit ?? 10),
    }),
    sales_countries: adminAction({
      params: Type.Object(limitParams),
      permission: STATS_PERMISSION,
      summary: 'Paid invoices per buyer country (as each invoice recorded it), most first: {"DE": 40, …}',
      result: CountriesResult,
      handler: ({ limit }, { services }) => services.stats.salesCountries(limit ?? 10),
    }),
  },
};
