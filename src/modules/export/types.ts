// The exports there are and the filters they take: shared by the service that reads the rows and the checks of
// what staff ask for (filters.ts).
export const EXPORT_KINDS = ['clients', 'orders', 'invoices', 'transactions', 'credit_notes'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

export interface ExportFilters {
  status?: string | undefined;
  client_id?: number | undefined;
  product_id?: number | undefined;
  invoice_id?: number | undefined;
  type?: string | undefined;
  gateway?: string | undefined;
  search?: string | undefined;
  date_from?: string | undefined;
  date_to?: string | undefined;
}
