// The records behind the money figures, for the range: invoices paid, refunds, credit notes to the balance, usage and
// top-up lines, failed payments, and the top customers. The filters are revenue.ts's and customers.ts's, so a list's
// rows add up to its figure. Each row also carries its amount in the default currency at its invoice's stored rate
// (`default_currency`, `…_in_default`: the exports' columns), so the figure's default-currency total can be checked.
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { amountOf, inDefault, nameOf, type FigureList, type Row } from './list-types.ts';
import { topCustomersIn } from './top-customers.ts';
import type { DbNumber } from './list-types.ts';

const PAID = ['paid', 'refunded'] as const;
export const TOP_CUSTOMERS = 10;

/** A transaction's or credit note's invoice's stored rate and base, as correlated subqueries (no join to disambiguate). */
function invoiceRate(eb: ExpressionBuilder<Database, 'transactions'> | ExpressionBuilder<Database, 'credit_notes'>, table: 'transactions' | 'credit_notes') {
  const invoice = (eb as ExpressionBuilder<Database, 'transactions'>).selectFrom('invoices').whereRef('invoices.id', '=', `${table as 'transactions'}.invoice_id`);
  return [invoice.select('invoices.currency_rate').as('currency_rate'), invoice.select('invoices.currency_base').as('currency_base')] as const;
}

async function total(query: { executeTakeFirstOrThrow(): Promise<{ n: DbNumber }> }): Promise<number> {
  return Number((await query.executeTakeFirstOrThrow()).n);
}

const paidInvoices: FigureList = {
  columns: ['invoice_id', 'number', 'client_id', 'currency', 'total', 'paid_at', 'from_balance', 'default_currency', 'total_in_default'],
  async read({ db, range, into }, offset, limit) {
    const base = db.selectFrom('invoices').where('paid_at', '>=', range.start).where('paid_at', '<', range.end).where('status', 'in', PAID);
    const [rows, n] = await Promise.all([
      base
        .select((eb) => [
          'id',
          'number',
          'client_id',
          'currency',
          'total',
          'paid_at',
          'currency_rate',
          'currency_base',
          eb
            .exists(eb.selectFrom('transactions').select('transactions.id').whereRef('transactions.invoice_id', '=', 'invoices.id').where('transactions.type', '=', 'payment').where('transactions.gateway', '=', 'credits'))
            .as('from_balance'),
        ])
        .orderBy('paid_at')
        .orderBy('id')
        .offset(offset)
        .limit(limit)
        .execute(),
      total(base.select((eb) => eb.fn.countAll<DbNumber>().as('n'))),
    ]);
    return {
      rows: rows.map((row) => ({ invoice_id: row.id, number: row.number, client_id: row.client_id, currency: row.currency, total: amountOf(row.total, row.currency), paid_at: row.paid_at, from_balance: row.from_balance ? 1 : 0, ...inDefault(into, 'total_in_default', row.total, row) })),
      total: n,
    };
  },
};

const refunds: FigureList = {
  columns: ['transaction_id', 'invoice_id', 'client_id', 'gateway', 'currency', 'amount', 'created_at', 'default_currency', 'amount_in_default'],
  async read({ db, range, into }, offset, limit) {
    const base = db
      .selectFrom('transactions')
      .where('type', '=', 'refund')
      .where('status', '=', 'refunded')
      .where('refund_of', 'is', null)
      .where((eb) => eb.or([eb('gateway', 'is', null), eb('gateway', '<>', 'credits')]))
      .where('created_at', '>=', range.start)
      .where('created_at', '<', range.end);
    const [rows, n] = await Promise.all([
      base.select((eb) => ['id', 'invoice_id', 'client_id', 'gateway', 'currency', 'amount', 'created_at', ...invoiceRate(eb, 'transactions')]).orderBy('created_at').orderBy('id').offset(offset).limit(limit).execute(),
      total(base.select((eb) => eb.fn.countAll<DbNumber>().as('n'))),
    ]);
    return { rows: rows.map((row) => ({ transaction_id: row.id, invoice_id: row.invoice_id, client_id: row.client_id, gateway: row.gateway, currency: row.currency, amount: amountOf(row.amount, row.currency), created_at: row.created_at, ...inDefault(into, 'amount_in_default', row.amount, row) })), total: n };
  },
};

const creditNotes: FigureList = {
  columns: ['credit_note_id', 'number', 'invoice_id', 'client_id', 'currency', 'total', 'reason', 'created_at', 'default_currency', 'total_in_default'],
  async read({ db, range, into }, offset, limit) {
    const base = db.selectFrom('credit_notes').where('method', '=', 'balance').where('created_at', '>=', range.start).where('created_at', '<', range.end);
    const [rows, n] = await Promise.all([
      base.select((eb) => ['id', 'number', 'invoice_id', 'client_id', 'currency', 'total', 'reason', 'created_at', ...invoiceRate(eb, 'credit_notes')]).orderBy('created_at').orderBy('id').offset(offset).limit(limit).execute(),
      total(base.select((eb) => eb.fn.countAll<DbNumber>().as('n'))),
    ]);
    return { rows: rows.map((row) => ({ credit_note_id: row.id, number: row.number, invoice_id: row.invoice_id, client_id: row.client_id, currency: row.currency, total: amountOf(row.total, row.currency), reason: row.reason, created_at: row.created_at, ...inDefault(into, 'total_in_default', row.total, row) })), total: n };
  },
};

function linesOf(task: 'usage' | 'deposit'): FigureList {
  return {
    columns: ['invoice_id', 'client_id', 'title', 'currency', 'amount', 'paid_at', 'default_currency', 'amount_in_default'],
    async read({ db, range, into }, offset, limit) {
      const base = db
        .selectFrom('invoices')
        .innerJoin('invoice_items', 'invoice_items.invoice_id', 'invoices.id')
        .where('invoices.paid_at', '>=', range.start)
        .where('invoices.paid_at', '<', range.end)
        .where('invoices.status', 'in', PAID)
        .where('invoice_items.task', '=', task);
      const [rows, n] = await Promise.all([
        base
          .select(['invoices.id as invoice_id', 'invoices.client_id', 'invoice_items.title', 'invoices.currency', 'invoice_items.total', 'invoices.paid_at', 'invoices.currency_rate', 'invoices.currency_base'])
          .orderBy('invoices.paid_at')
          .orderBy('invoice_items.id')
          .offset(offset)
          .limit(limit)
          .execute(),
        total(base.select((eb) => eb.fn.countAll<DbNumber>().as('n'))),
      ]);
      return { rows: rows.map((row) => ({ invoice_id: row.invoice_id, client_id: row.client_id, title: row.title, currency: row.currency, amount: amountOf(row.total, row.currency), paid_at: row.paid_at, ...inDefault(into, 'amount_in_default', row.total, row) })), total: n };
    },
  };
}

const failedPayments: FigureList = {
  columns: ['invoice_id', 'client_id', 'currency', 'total', 'failures', 'first_failed_at', 'status', 'recovered', 'paid_at', 'default_currency', 'total_in_default'],
  async read({ db, range, into }, offset, limit) {
    const failures = (kysely: Kysely<Database>) =>
      kysely
        .selectFrom('transactions')
        .select((eb) => ['invoice_id', eb.fn.countAll<DbNumber>().as('failures'), eb.fn.min<string>('created_at').as('first_failed_at')])
        .where('type', '=', 'payment')
        .where('status', '=', 'failed')
        .where('created_at', '>=', range.start)
        .where('created_at', '<', range.end)
        .groupBy('invoice_id');
    const base = db.selectFrom(failures(db).as('failures')).innerJoin('invoices', 'invoices.id', 'failures.invoice_id');
    const [rows, n] = await Promise.all([
      base
        .select(['invoices.id', 'invoices.client_id', 'invoices.currency', 'invoices.total', 'invoices.status', 'invoices.paid_at', 'invoices.currency_rate', 'invoices.currency_base', 'failures.failures', 'failures.first_failed_at'])
        .orderBy('failures.first_failed_at')
        .orderBy('invoices.id')
        .offset(offset)
        .limit(limit)
        .execute(),
      total(base.select((eb) => eb.fn.countAll<DbNumber>().as('n'))),
    ]);
    return {
      rows: rows.map((row) => ({
        invoice_id: row.id,
        client_id: row.client_id,
        currency: row.currency,
        total: amountOf(row.total, row.currency),
        failures: Number(row.failures),
        first_failed_at: row.first_failed_at,
        status: row.status,
        recovered: row.status === 'paid' || row.status === 'refunded' ? 1 : 0,
        paid_at: row.paid_at,
        ...inDefault(into, 'total_in_default', row.total, row),
      })),
      total: n,
    };
  },
};

const topCustomers: FigureList = {
  columns: ['rank', 'client_id', 'email', 'name', 'currency', 'amount', 'default_currency', 'amount_in_default'],
  async read({ db, dialect, range, into }, offset, limit) {
    const top = await topCustomersIn(db, dialect, range, TOP_CUSTOMERS, into);
    const page = top.slice(offset, offset + limit);
    const ids = page.map((row) => row.client_id);
    const clients = ids.length === 0 ? [] : await db.selectFrom('clients').select(['id', 'email', 'first_name', 'last_name']).where('id', 'in', ids).execute();
    const byId = new Map(clients.map((client) => [client.id, client]));
    const rows: Row[] = page.map((row, index) => {
      const client = byId.get(row.client_id);
      return { rank: offset + index + 1, client_id: row.client_id, email: client?.email ?? null, name: client === undefined ? null : nameOf(client.first_name, client.last_name), currency: row.currency, amount: amountOf(row.amount, row.currency), default_currency: into.code, amount_in_default: amountOf(row.default_amount, into.code) };
    });
    return { rows, total: top.length };
  },
};

export const moneyLists = {
  revenue: paidInvoices,
  refunds,
  credit_notes: creditNotes,
  usage: linesOf('usage'),
  top_ups: linesOf('deposit'),
  failed_payments: failedPayments,
  top_customers: topCustomers,
} satisfies Record<string, FigureList>;
