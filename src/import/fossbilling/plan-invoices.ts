// Planning invoices (with their lines, tax and numbers) and transactions. Rules (docs/moving-from-fossbilling.md):
// - An invoice of a missing or skipped client is skipped; one with no lines is skipped (FOSSBilling's total of it is
//   0 and Tollgate has no empty invoices), with its transactions.
// - Amounts: line total = quantity × unit price; tax = the taxed lines' sum × rate, rounded half-up once per invoice
//   (FOSSBilling 0.8's rule, and Tollgate's); total = subtotal + tax.
// - A paid or refunded invoice keeps its number, `<serie><nr>`; an unpaid one is a pro forma in Tollgate (numbered
//   when paid), so it arrives without one. A number Tollgate already uses (or a duplicate in FOSSBilling) gets the
//   suffix `-FB<id>`. The public hash is kept, so guest links keep working, unless unusable or already taken.
// - A line's order is linked when that order is imported; lines are executed when FOSSBilling executed them.
// - A transaction of a missing or skipped invoice is skipped.
import { isoOf, periodOf, rateOf, textOf, toMinor } from './convert.ts';
import type { FbInvoice, FbInvoiceItem, FbTransaction } from './source.ts';
import { mappedId, planned, type InvoiceStatus, type InvoiceValues, type ItemValues, type Planned, type Problem, type TollgateState, type TransactionValues } from './plan-types.ts';
import { precisionOf } from '../../lib/currency.ts';
import { randomString } from '../../lib/crypto.ts';

type Fingerprint = (json: string) => string;

const STATUSES: ReadonlySet<string> = new Set(['unpaid', 'paid', 'canceled', 'refunded']);
const HASH = /^[A-Za-z0-9_-]{16,64}$/;

/** Half-up division of a non-negative product by 100,000 (rate in thousandths of a percent). */
function taxOf(taxable: number, rate: number): number {
  if (taxable <= 0 || rate <= 0) return 0;
  const product = BigInt(taxable) * BigInt(rate);
  return Number((product + 50_000n) / 100_000n);
}

export interface InvoicePlan {
  invoices: Array<Planned<InvoiceValues>>;
  transactions: Array<Planned<TransactionValues>>;
  highestNumber: number | null;
}

export function planInvoices(
  invoices: FbInvoice[],
  items: FbInvoiceItem[],
  transactions: FbTransaction[],
  clientIds: ReadonlySet<number>,
  orderIds: ReadonlySet<number>,
  state: TollgateState,
  fp: Fingerprint,
  problems: Problem[],
): InvoicePlan {
  const itemsOf = new Map<number, FbInvoiceItem[]>();
  for (const item of items) {
    const list = itemsOf.get(item.invoice_id) ?? [];
    list.push(item);
    itemsOf.set(item.invoice_id, list);
  }
  const numbers = new Set<string>();
  const hashes = new Set<string>();
  const imported = new Map<number, number>();
  const out: Array<Planned<InvoiceValues>> = [];
  let highestNumber: number | null = null;
  const prefixed = new RegExp(`^${state.invoicePrefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\d+)$`);
  for (const invoice of invoices) {
    const report = (outcome: Problem['outcome'], message: string): void => void problems.push({ kind: 'invoice', fbId: invoice.id, outcome, message });
    if (invoice.client_id === null || !clientIds.has(invoice.client_id)) { report('skipped', `its client ${invoice.client_id ?? 'none'} is missing or skipped`); continue; }
    const lines = itemsOf.get(invoice.id) ?? [];
    if (lines.length === 0) { report('skipped', 'invoice with no lines'); continue; }
    const currency = textOf(invoice.currency)?.toUpperCase() ?? state.currency;
    const precision = precisionOf(currency);
    const status: InvoiceStatus = STATUSES.has(invoice.status ?? '') ? (invoice.status as InvoiceStatus) : 'unpaid';
    if (status !== invoice.status) report('fixed', `unknown status "${invoice.status ?? ''}": imported as unpaid`);
    let taxable = 0;
    const itemValues: ItemValues[] = lines.map((line) => {
      const quantity = Math.max(1, line.quantity ?? 1);
      const price = toMinor(line.price, precision);
      const total = quantity * price;
      if (line.taxed === 1) taxable += total;
      const orderFbId = line.type === 'order' && /^\d+$/.test(line.rel_id ?? '') ? Number(line.rel_id) : null;
      return {
        orderFbId: orderFbId !== null && orderIds.has(orderFbId) ? orderFbId : null,
        task: line.task === 'renew' ? 'renew' : 'activate',
        title: textOf(line.title) ?? 'Item',
        period: periodOf(line.period),
        quantity,
        price,
        total,
        executed: line.status === 'executed' || status !== 'unpaid' ? 1 : 0,
      };
    });
    const subtotal = itemValues.reduce((sum, line) => sum + line.total, 0);
    const taxRate = textOf(invoice.taxname) === null && rateOf(invoice.taxrate) === 0 ? 0 : rateOf(invoice.taxrate);
    const tax = taxOf(taxable, taxRate);
    let number = status === 'paid' || status === 'refunded' ? `${textOf(invoice.serie) ?? ''}${textOf(invoice.nr) ?? ''}` || null : null;
    if (number !== null) {
      const owner = state.invoiceNumbers.get(number);
      if (numbers.has(number) || (owner !== undefined && owner !== mappedId(state, 'invoice', invoice.id))) {
        report('fixed', `number ${number} is already used: imported as ${number}-FB${invoice.id}`);
        number = `${number}-FB${invoice.id}`;
      }
      numbers.add(number);
      const match = prefixed.exec(number);
      if (match !== null) highestNumber = Math.max(highestNumber ?? 0, Number(match[1]));
    }
    let hash = textOf(invoice.hash);
    const hashOwner = hash === null ? undefined : state.invoiceHashes.get(hash);
    if (hash === null || !HASH.test(hash) || hashes.has(hash) || (hashOwner !== undefined && hashOwner !== mappedId(state, 'invoice', invoice.id))) {
      if (hash !== null) report('fixed', 'public hash unusable or already taken: a new one is made (old guest links stop working)');
      // A mapped invoice keeps the hash it was given; apply.ts leaves a null hash alone on update.
      hash = null;
    }
    if (hash !== null) hashes.add(hash);
    const created = isoOf(invoice.created_at) ?? '1970-01-01T00:00:00Z';
    const buyerName = [textOf(invoice.buyer_first_name), textOf(invoice.buyer_last_name)].filter((part) => part !== null).join(' ');
    out.push(
      planned(state, 'invoice', invoice.id, {
        clientFbId: invoice.client_id,
        hash,
        status,
        currency,
        number,
        subtotal,
        tax,
        total: subtotal + tax,
        tax_name: textOf(invoice.taxname),
        tax_rate: taxRate,
        due_at: isoOf(invoice.due_at),
        paid_at: status === 'unpaid' ? null : isoOf(invoice.paid_at),
        created_at: created,
        updated_at: isoOf(invoice.updated_at) ?? created,
        seller: JSON.stringify({
          name: textOf(invoice.seller_company), email: textOf(invoice.seller_email), address_1: textOf(invoice.seller_address), address_2: null,
          address_3: null, city: null, postcode: null, country: null, vat_number: textOf(invoice.seller_company_vat), logo_url: null,
        }),
        buyer: JSON.stringify({
          name: buyerName, email: textOf(invoice.buyer_email) ?? '', company: textOf(invoice.buyer_company), address_1: textOf(invoice.buyer_address),
          address_2: null, city: textOf(invoice.buyer_city), state: textOf(invoice.buyer_state), postcode: textOf(invoice.buyer_zip),
          country: textOf(invoice.buyer_country), vat_number: textOf(invoice.buyer_company_vat),
        }),
        items: itemValues,
      }, fp),
    );
    imported.set(invoice.id, invoice.client_id);
  }
  return { invoices: out, transactions: planTransactions(transactions, imported, state, fp, problems), highestNumber };
}

function planTransactions(transactions: FbTransaction[], invoiceClients: ReadonlyMap<number, number>, state: TollgateState, fp: Fingerprint, problems: Problem[]): Array<Planned<TransactionValues>> {
  const out: Array<Planned<TransactionValues>> = [];
  for (const txn of transactions) {
    const clientFbId = txn.invoice_id === null ? undefined : invoiceClients.get(txn.invoice_id);
    if (txn.invoice_id === null || clientFbId === undefined) {
      problems.push({ kind: 'transaction', fbId: txn.id, outcome: 'skipped', message: `its invoice ${txn.invoice_id ?? 'none'} is missing or skipped` });
      continue;
    }
    const currency = textOf(txn.currency)?.toUpperCase() ?? state.currency;
    // FOSSBilling: received (an IPN not acted on), approved / processed (applied), error.
    const status = txn.status === 'processed' || txn.status === 'approved' ? 'processed' : txn.status === 'error' ? 'error' : 'failed';
    const message = textOf(txn.error) ?? textOf(txn.note) ?? (status === 'failed' ? `not processed in FOSSBilling (${txn.status ?? 'no status'})` : null);
    out.push(
      planned(state, 'transaction', txn.id, {
        invoiceFbId: txn.invoice_id,
        clientFbId,
        gateway: textOf(txn.gateway)?.toLowerCase() ?? null,
        transaction_id: textOf(txn.txn_id),
        amount: Math.abs(toMinor(txn.amount, precisionOf(currency))),
        currency,
        type: /refund/i.test(txn.type ?? '') ? 'refund' : 'payment',
        status,
        message,
        created_at: isoOf(txn.created_at) ?? '1970-01-01T00:00:00Z',
      }, fp),
    );
  }
  return out;
}

/** A fresh public hash for an invoice whose FOSSBilling hash could not be kept (32 characters, as Tollgate's). */
export function freshInvoiceHash(): string {
  return randomString(32);
}
