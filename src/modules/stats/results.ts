// Result schemas of the stats actions (the OpenAPI document types them; the tests validate every answer against them).
import { Type } from '@sinclair/typebox';
import { CalendarDate, Money, Nullable, Timestamp } from '../../platform/schemas.ts';
import { ORDER_STATUSES } from './fossbilling.ts';

const Currency = Type.String({ description: 'ISO 4217 code' });
const Count = Type.Integer({ minimum: 0 });
const Month = Type.String({ pattern: '^[0-9]{4}-[0-9]{2}$', description: 'YYYY-MM' });

const Compared = Type.Object({ currency: Currency, amount: Money, previous: Money }, { additionalProperties: false });
const CountCompared = Type.Object({ count: Count, previous: Count }, { additionalProperties: false });
const RecurringAmounts = Type.Array(Type.Object({ currency: Currency, amount: Money, mrr: Money }, { additionalProperties: false }));
const RevenueFields = { currency: Currency, paid: Money, refunds: Money, credit_notes: Money, net: Money };
const NowAndBefore = Type.Object({ amount: Money, previous: Money }, { additionalProperties: false });
const Totals = (fields: Record<string, typeof Money>) => Type.Object(fields, { additionalProperties: false });

/** Every money figure as one total in the default currency (stats/convert.ts says how each is converted). */
const InDefaultCurrency = Type.Object(
  {
    currency: Currency,
    mrr: NowAndBefore,
    arr: NowAndBefore,
    net_revenue: Totals({ paid: Money, refunds: Money, credit_notes: Money, net: Money, previous_net: Money }),
    revenue_by_month: Type.Array(Type.Object({ month: Month, paid: Money, refunds: Money, credit_notes: Money, net: Money }, { additionalProperties: false })),
    usage_revenue: NowAndBefore,
    top_ups: NowAndBefore,
    failed_payments: Totals({ failed: Money, recovered: Money }),
    cancellations_scheduled: Totals({ mrr: Money }),
    renewals_due: Totals({ amount: Money }),
    projected_overage: Totals({ amount: Money }),
  },
  { additionalProperties: false, description: 'The money figures in the default currency: invoiced amounts at each invoice’s stored rate, the rest at today’s rates' },
);

export const DashboardResult = Type.Object(
  {
    from: CalendarDate,
    to: CalendarDate,
    previous_from: CalendarDate,
    previous_to: CalendarDate,
    generated_at: Timestamp,
    default_currency: Type.String({ description: 'The instance’s default currency: `in_default_currency` is in it' }),
    conversion: Type.String({ description: 'How the amounts in other currencies were converted into the default, in words' }),
    mrr: Type.Array(Type.Object({ currency: Currency, amount: Money, previous: Money, orders: Count }, { additionalProperties: false }), {
      description: 'Monthly recurring revenue at the end of the range (previous: at its start), per currency',
    }),
    arr: Type.Array(Compared, { description: '12 × MRR' }),
    net_revenue: Type.Array(Type.Object({ ...RevenueFields, previous_net: Money }, { additionalProperties: false }), { description: 'paid − refunds − credit notes in the range' }),
    revenue_by_month: Type.Array(Type.Object({ month: Month, ...RevenueFields }, { additionalProperties: false }), { description: 'The 12 months ending with the range’s last month' }),
    usage_revenue: Type.Array(Compared, { description: 'Usage (overage) lines of invoices paid in the range' }),
    top_ups: Type.Array(Compared, { description: 'Top-up (credit) lines of invoices paid in the range' }),
    new_customers: CountCompared,
    churned_customers: CountCompared,
    failed_payments: Type.Object(
      {
        count: Count,
        recovered: Count,
        previous_count: Count,
        previous_recovered: Count,
        amounts: Type.Array(Type.Object({ currency: Currency, failed: Money, recovered: Money }, { additionalProperties: false })),
      },
      { additionalProperties: false },
    ),
    cancellations_scheduled: Type.Object({ count: Count, amounts: RecurringAmounts }, { additionalProperties: false }),
    renewals_due: Type.Object({ until: Timestamp, count: Count, amounts: RecurringAmounts }, { additionalProperties: false }),
    projected_overage: Type.Object(
      { orders: Count, amounts: Type.Array(Type.Object({ currency: Currency, amount: Money }, { additionalProperties: false })) },
      { additionalProperties: false },
    ),
    top_customers: Type.Array(
      Type.Object(
        { client_id: Type.Integer(), email: Nullable(Type.String()), name: Nullable(Type.String()), currency: Currency, amount: Money, default_amount: Money },
        { additionalProperties: false },
      ),
      { description: 'Ranked by what they paid in the default currency at the stored rates (`default_amount`)' },
    ),
    in_default_currency: InDefaultCurrency,
  },
  { additionalProperties: false },
);

const Cell = Type.Union([Type.String(), Type.Number(), Type.Null()]);
export const FigureListResult = Type.Object({
  figure: Type.String(),
  columns: Type.Array(Type.String(), { description: 'The keys of each row, in order (the CSV export’s header)' }),
  list: Type.Array(Type.Record(Type.String(), Cell)),
  page: Type.Integer(),
  per_page: Type.Integer(),
  pages: Type.Integer(),
  total: Type.Integer(),
});

export const SummaryResult = Type.Record(Type.String(), Count, { description: '<clients|orders|invoices|tickets>_<total|today|yesterday|this_month|last_month>' });

export const SummaryIncomeResult = Type.Object(
  { total: Money, today: Money, yesterday: Money, this_month: Money, last_month: Money },
  { additionalProperties: false },
);

export const OrdersStatusesResult = Type.Object(Object.fromEntries(ORDER_STATUSES.map((status) => [status, Count])), { additionalProperties: false });

export const ProductSummaryResult = Type.Array(Type.Object({ id: Type.Integer(), title: Type.String(), orders: Count }, { additionalProperties: false }));

export const IncomeVsRefundsResult = Type.Object({ refund: Money, income: Money }, { additionalProperties: false });

export const CountriesResult = Type.Record(Type.String(), Count, { description: 'country code ("" when none) → count, most first' });
