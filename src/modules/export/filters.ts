// What staff may ask of each export (GET/POST /api/admin/export/{kind}.csv, src/http/export-route.ts): the permission
// it needs and the filters it accepts, checked like an action's parameters.
import { errors } from '../../platform/errors.ts';
import { createdRange } from '../../platform/list-filters.ts';
import type { ExportFilters, ExportKind } from './types.ts';

/** The permission each export needs: the one that lets staff read the same list. */
export const EXPORT_PERMISSIONS: Record<ExportKind, string> = {
  clients: 'client.view',
  orders: 'order.view',
  invoices: 'invoice.view',
  transactions: 'invoice.view',
  credit_notes: 'invoice.view',
};

/** The filters each export accepts, and their allowed values (null = free text, 'id' = a positive integer, 'date' = YYYY-MM-DD). */
const FILTERS: Record<ExportKind, Record<string, readonly string[] | 'id' | 'date' | null>> = {
  clients: { status: ['active', 'suspended', 'canceled'], search: null, date_from: 'date', date_to: 'date' },
  orders: { status: ['pending_setup', 'failed_setup', 'active', 'suspended', 'canceled'], client_id: 'id', product_id: 'id', type: null, search: null, date_from: 'date', date_to: 'date' },
  invoices: { status: ['unpaid', 'paid', 'canceled', 'refunded'], client_id: 'id', search: null, date_from: 'date', date_to: 'date' },
  transactions: { status: ['processed', 'failed', 'refunded', 'error'], client_id: 'id', invoice_id: 'id', gateway: null, search: null, date_from: 'date', date_to: 'date' },
  // `type`: the method (refund, balance); `search`: the client's e-mail or name, or the note's number.
  credit_notes: { type: ['refund', 'balance'], client_id: 'id', invoice_id: 'id', search: null, date_from: 'date', date_to: 'date' },
};

/** The request's filters, checked like an action's parameters (422 naming the parameter). Empty values are absent. */
export function readFilters(kind: ExportKind, params: Record<string, unknown>): ExportFilters {
  const out: Record<string, string | number> = {};
  for (const [name, rule] of Object.entries(FILTERS[kind])) {
    const value = params[name];
    if (value === undefined || value === '') continue;
    if (typeof value !== 'string' && typeof value !== 'number') throw errors.invalid(name, 'must be a string');
    const text = String(value);
    if (text.length > 255) throw errors.invalid(name, 'must be at most 255 characters');
    if (rule === 'id') {
      if (!/^[1-9]\d{0,9}$/.test(text) || Number(text) > 2_147_483_647) throw errors.invalid(name, 'must be a positive integer');
      out[name] = Number(text);
    } else if (rule === 'date') {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(Date.parse(`${text}T00:00:00Z`))) throw errors.invalid(name, 'must be a date (YYYY-MM-DD)');
      out[name] = text;
    } else if (rule !== null) {
      if (!rule.includes(text)) throw errors.invalid(name, `must be one of ${rule.join(', ')}`);
      out[name] = text;
    } else out[name] = text;
  }
  // A range that ends before it starts: 422 naming date_to, as on the lists.
  createdRange(out);
  return out;
}
