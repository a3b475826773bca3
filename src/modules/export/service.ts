// CSV exports of clients, orders, invoices and transactions for staff. Rows are read in batches by keyset (id >
// the last id seen, ascending) and handed out one batch of CSV text at a time, so an export of a million rows holds
// one batch in memory, never the table. The filters mean what they mean on the list actions (status, client,
// `search`, `date_from`/`date_to`). Read-only: the tables stay written by their own modules.
import { sql, type Kysely } from 'kysely';
import { likeEscaped, searchPattern } from '../../db/like.ts';
import { ownedMatches } from '../../db/search.ts';
import type { Database } from '../../db/schema.ts';
import { invoiceLabel } from '../../lib/invoice-label.ts';
import { createdRange, searchText } from '../../platform/list-filters.ts';
import { searchedId } from '../../lib/searched-id.ts';
import { moneyFor } from '../../lib/money.ts';
import type { ClientService } from '../client/service.ts';
import type { Selling, StoredRate } from '../currency/selling.ts';
import { csvLine, type Cell } from './csv.ts';
import { EXPORT_PERMISSIONS, readFilters } from './filters.ts';
import { EXPORT_KINDS, type ExportFilters, type ExportKind } from './types.ts';
import { creditNoteRows } from './credit-notes.ts';
import { ossReportCsv } from './oss-report.ts';
import type { OssReports } from '../invoice/oss-report.ts';

export { EXPORT_KINDS, type ExportFilters, type ExportKind } from './types.ts';

export const DEFAULT_BATCH = 500;

const HEADERS: Record<ExportKind, readonly string[]> = {
  clients: ['id', 'email', 'first_name', 'last_name', 'company', 'phone', 'country', 'status', 'currency', 'created_at'],
  orders: ['id', 'client_id', 'client_email', 'client_name', 'product_id', 'title', 'type', 'period', 'price', 'currency', 'status', 'expires_at', 'created_at'],
  // `invoice`: the invoice's one name ("Invoice NWD-4", "Pro forma 12"), last so the earlier columns keep their places.
  // Issue 26: the rate stored on the invoice, and the amounts in the default currency at that rate (named per row in
  // `default_currency`), after the earlier columns so they keep their places.
  invoices: ['id', 'number', 'client_id', 'client_email', 'client_name', 'status', 'currency', 'subtotal', 'total', 'due_at', 'paid_at', 'created_at', 'invoice', 'currency_rate', 'default_currency', 'subtotal_in_default', 'total_in_default'],
  credit_notes: ['id', 'number', 'invoice_id', 'invoice_number', 'client_id', 'client_email', 'client_name', 'method', 'reason', 'subtotal', 'tax', 'total', 'currency', 'transaction_id', 'created_at', 'currency_rate', 'default_currency', 'total_in_default'],
  transactions: ['id', 'invoice_id', 'client_id', 'client_email', 'client_name', 'type', 'gateway', 'txn_id', 'amount', 'currency', 'status', 'message', 'created_at', 'invoice', 'currency_rate', 'default_currency', 'amount_in_default'],
};

/** Turns an invoice's amount into the default currency at the rate stored on it (Selling.storedRateConverter). */
export type ToDefault = { defaultCode: string; toDefault: (amount: number, invoice: StoredRate) => number };

function fullName(first: string | null, last: string | null): string {
  return [first, last].filter((part) => part !== null && part !== '').join(' ');
}

export interface ExportServiceDeps {
  db: Kysely<Database>;
  /** The lists' own rule for "client matches the search" (e-mail or name), with its indexes. */
  clients: Pick<ClientService, 'matches'>;
  /** Reports are in the default currency at each invoice's stored rate (issue 26 item 7). */
  selling: Pick<Selling, 'storedRateConverter'>;
  /** The One-Stop-Shop report, as oss_report.csv (issue 26). */
  ossReports: Pick<OssReports, 'forQuarter'>;
}

export function createExportService({ db, clients, ossReports, selling }: ExportServiceDeps) {

  /** One batch of rows after `after`, as CSV lines, with the last id read (null when there are no more). */
  async function batch(kind: ExportKind, filters: ExportFilters, after: number, size: number, rates: ToDefault): Promise<{ lines: string[]; last: number | null }> {
    const inDefault = moneyFor(rates.defaultCode);
    let rows: Array<{ id: number; cells: Cell[] }>;
    if (kind === 'clients') {
      let query = db.selectFrom('clients').selectAll('clients').where('clients.id', '>', after);
      if (filters.status !== undefined) query = query.where('clients.status', '=', filters.status as 'active');
      const text = searchText(filters.search);
      if (text !== null) {
        // As admin/client/get_list: e-mail, name or company, or (digits) the client's id.
        const pattern = searchPattern(text.toLowerCase());
        const asId = searchedId(text);
        query = query.where((eb) =>
          eb.or([
            likeEscaped(eb.fn<string>('lower', ['clients.email']), pattern),
            likeEscaped(eb.fn<string>('lower', ['clients.first_name']), pattern),
            likeEscaped(eb.fn<string | null>('lower', ['clients.last_name']), pattern),
            likeEscaped(eb.fn<string | null>('lower', ['clients.company']), pattern),
            ...(asId !== null ? [eb('clients.id', '=', asId)] : []),
          ]),
        );
      }
      const range = createdRange(filters);
      if (range.from !== undefined) query = query.where('clients.created_at', '>=', range.from);
      if (range.to !== undefined) query = query.where('clients.created_at', '<=', range.to);
      const found = await query.orderBy('clients.id').limit(size).execute();
      rows = found.map((c) => ({ id: c.id, cells: [c.id, c.email, c.first_name, c.last_name, c.company, c.phone, c.country, c.status, c.currency, c.created_at] }));
    } else if (kind === 'orders') {
      let query = db
        .selectFrom('orders')
        // Left joins: a record whose client is gone is still exported, with the e-mail and name left empty.
        .leftJoin('clients', 'clients.id', 'orders.client_id')
        .selectAll('orders')
        .select(['clients.email as client_email', 'clients.first_name', 'clients.last_name'])
        .where('orders.id', '>', after);
      if (filters.status !== undefined) query = query.where('orders.status', '=', filters.status as 'active');
      if (filters.client_id !== undefined) query = query.where('orders.client_id', '=', filters.client_id);
      if (filters.product_id !== undefined) query = query.where('orders.product_id', '=', filters.product_id);
      if (filters.type !== undefined) query = query.where('orders.type', '=', filters.type);
      const text = searchText(filters.search);
      // As admin/order/get_list, row by row (src/db/search.ts).
      if (text !== null) query = query.where(ownedMatches({ table: 'orders', column: 'title', fts: 'orders_search' }, text, clients));
      const range = createdRange(filters);
      if (range.from !== undefined) query = query.where('orders.created_at', '>=', range.from);
      if (range.to !== undefined) query = query.where('orders.created_at', '<=', range.to);
      const found = await query.orderBy('orders.id').limit(size).execute();
      rows = found.map((o) => ({
        id: o.id,
        cells: [o.id, o.client_id, o.client_email, fullName(o.first_name, o.last_name), o.product_id, o.title, o.type, o.period, moneyFor(o.currency).format(o.price), o.currency, o.status, o.expires_at, o.created_at],
      }));
    } else if (kind === 'invoices') {
      let query = db
        .selectFrom('invoices')
        .leftJoin('clients', 'clients.id', 'invoices.client_id')
        .selectAll('invoices')
        .select(['clients.email as client_email', 'clients.first_name', 'clients.last_name'])
        .where('invoices.id', '>', after);
      if (filters.status !== undefined) query = query.where('invoices.status', '=', filters.status as 'paid');
      if (filters.client_id !== undefined) query = query.where('invoices.client_id', '=', filters.client_id);
      const text = searchText(filters.search);
      // As admin/invoice/get_list, row by row (src/db/search.ts).
      if (text !== null) query = query.where(ownedMatches({ table: 'invoices', column: 'number', fts: 'invoices_search' }, text, clients));
      const range = createdRange(filters);
      if (range.from !== undefined) query = query.where('invoices.created_at', '>=', range.from);
      if (range.to !== undefined) query = query.where('invoices.created_at', '<=', range.to);
      const found = await query.orderBy('invoices.id').limit(size).execute();
      rows = found.map((i) => {
        const money = moneyFor(i.currency);
        return {
          id: i.id,
          cells: [
            i.id, i.number, i.client_id, i.client_email, fullName(i.first_name, i.last_name), i.status, i.currency, money.format(i.subtotal), money.format(i.total), i.due_at, i.paid_at, i.created_at, invoiceLabel(i),
            i.currency_rate, rates.defaultCode, inDefault.format(rates.toDefault(i.subtotal, i)), inDefault.format(rates.toDefault(i.total, i)),
          ],
        };
      });
    } else if (kind === 'credit_notes') {
      rows = await creditNoteRows(db, clients, filters, after, size, rates);
    } else {
      let query = db
        .selectFrom('transactions')
        .leftJoin('clients', 'clients.id', 'transactions.client_id')
        .leftJoin('invoices', 'invoices.id', 'transactions.invoice_id')
        .selectAll('transactions')
        .select(['clients.email as client_email', 'clients.first_name', 'clients.last_name', 'invoices.number as invoice_number', 'invoices.currency_rate', 'invoices.currency_base'])
        .where('transactions.id', '>', after);
      if (filters.status !== undefined) query = query.where('transactions.status', '=', filters.status);
      if (filters.client_id !== undefined) query = query.where('transactions.client_id', '=', filters.client_id);
      if (filters.invoice_id !== undefined) query = query.where('transactions.invoice_id', '=', filters.invoice_id);
      if (filters.gateway !== undefined) query = query.where('transactions.gateway', '=', filters.gateway);
      const text = searchText(filters.search);
      // Transactions have no list search; here it names the client (e-mail or name), like the other exports.
      if (text !== null) query = query.where(clients.matches(text, sql.ref<number>('transactions.client_id')));
      const range = createdRange(filters);
      if (range.from !== undefined) query = query.where('transactions.created_at', '>=', range.from);
      if (range.to !== undefined) query = query.where('transactions.created_at', '<=', range.to);
      const found = await query.orderBy('transactions.id').limit(size).execute();
      rows = found.map((x) => ({
        id: x.id,
        cells: [
          x.id, x.invoice_id, x.client_id, x.client_email, fullName(x.first_name, x.last_name), x.type, x.gateway, x.transaction_id, moneyFor(x.currency).format(x.amount), x.currency, x.status, x.message, x.created_at,
          invoiceLabel({ id: x.invoice_id, number: x.invoice_number }),
          // A transaction is in its invoice's currency and converts at its invoice's rate.
          x.currency_rate, rates.defaultCode, inDefault.format(rates.toDefault(x.amount, { currency: x.currency, currency_rate: x.currency_rate, currency_base: x.currency_base })),
        ],
      }));
    }
    return { lines: rows.map((row) => csvLine(row.cells)), last: rows.length === size ? rows[rows.length - 1]!.id : null };
  }

  /**
   * The export as chunks of CSV text: the header line, then one chunk per batch of `batchSize` rows. The next batch
   * is read only when the consumer asks for it (the HTTP route asks once the socket has taken the previous one).
   */
  async function* csv(kind: ExportKind, filters: ExportFilters, batchSize = DEFAULT_BATCH): AsyncGenerator<string> {
    yield csvLine(HEADERS[kind]);
    // The currencies as they are when the export starts: every row converts with the same default.
    const rates = await selling.storedRateConverter(db);
    let after = 0;
    for (;;) {
      const { lines, last } = await batch(kind, filters, after, batchSize, rates);
      if (lines.length > 0) yield lines.join('');
      if (last === null) return;
      after = last;
    }
  }

  return {
    csv,

    /**
     * The export a file name asks for (`clients.csv`, …), or undefined when there is none: its kind, the permission
     * it needs, and its rows for the request's parameters. `rows` checks the filters at once (422 naming the
     * parameter) and reads nothing until the first chunk is asked for.
     */
    request(file: string): { kind: string; permission: string; rows(params: Record<string, unknown>): AsyncGenerator<string> } | undefined {
      if (file === 'oss_report.csv') return { kind: 'oss_report', permission: 'invoice.view', rows: (params) => ossReportCsv(ossReports, params) };
      const kind = EXPORT_KINDS.find((name) => `${name}.csv` === file);
      if (kind === undefined) return undefined;
      return { kind, permission: EXPORT_PERMISSIONS[kind], rows: (params) => csv(kind, readFilters(kind, params)) };
    },
  };
}

export type ExportService = ReturnType<typeof createExportService>;
