// The credit-note export (issue 24 item 8): one row per credit note with its invoice's number and the client, read by
// keyset like the other exports (service.ts). Read-only.
import { sql, type Kysely } from 'kysely';
import { likeEscaped, searchPattern } from '../../db/like.ts';
import type { Database } from '../../db/schema.ts';
import { createdRange, searchText } from '../../platform/list-filters.ts';
import { moneyFor } from '../../lib/money.ts';
import type { ClientService } from '../client/service.ts';
import type { Cell } from './csv.ts';
import type { ExportFilters } from './types.ts';
import type { StoredRate } from '../currency/selling.ts';

export async function creditNoteRows(
  db: Kysely<Database>,
  clients: Pick<ClientService, 'matches'>,
  filters: ExportFilters,
  after: number,
  size: number,
  rates: { defaultCode: string; toDefault: (amount: number, invoice: StoredRate) => number },
): Promise<Array<{ id: number; cells: Cell[] }>> {
  let query = db
    .selectFrom('credit_notes')
    .leftJoin('clients', 'clients.id', 'credit_notes.client_id')
    .leftJoin('invoices', 'invoices.id', 'credit_notes.invoice_id')
    .selectAll('credit_notes')
    .select(['clients.email as client_email', 'clients.first_name', 'clients.last_name', 'invoices.number as invoice_number', 'invoices.currency_rate', 'invoices.currency_base'])
    .where('credit_notes.id', '>', after);
  if (filters.type !== undefined) query = query.where('credit_notes.method', '=', filters.type as 'refund');
  if (filters.client_id !== undefined) query = query.where('credit_notes.client_id', '=', filters.client_id);
  if (filters.invoice_id !== undefined) query = query.where('credit_notes.invoice_id', '=', filters.invoice_id);
  const text = searchText(filters.search);
  if (text !== null) {
    const pattern = searchPattern(text.toLowerCase());
    query = query.where((eb) => eb.or([likeEscaped(eb.fn<string>('lower', ['credit_notes.number']), pattern), clients.matches(text, sql.ref<number>('credit_notes.client_id'))]));
  }
  const range = createdRange(filters);
  if (range.from !== undefined) query = query.where('credit_notes.created_at', '>=', range.from);
  if (range.to !== undefined) query = query.where('credit_notes.created_at', '<=', range.to);
  const found = await query.orderBy('credit_notes.id').limit(size).execute();
  return found.map((n) => {
    const money = moneyFor(n.currency);
    const name = [n.first_name, n.last_name].filter((part) => part !== null && part !== '').join(' ');
    return {
      id: n.id,
      cells: [
        n.id, n.number, n.invoice_id, n.invoice_number, n.client_id, n.client_email, name, n.method, n.reason, money.format(n.subtotal), money.format(n.tax), money.format(n.total), n.currency, n.transaction_id, n.created_at,
        // A note is in its invoice's currency and converts at its invoice's stored rate.
        n.currency_rate, rates.defaultCode, moneyFor(rates.defaultCode).format(rates.toDefault(n.total, { currency: n.currency, currency_rate: n.currency_rate, currency_base: n.currency_base })),
      ],
    };
  });
}
