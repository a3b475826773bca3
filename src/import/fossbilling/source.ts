// Reading a FOSSBilling database (MySQL or MariaDB, through mysql2, loaded on first use). Only SELECTs: the source
// is never written. Columns are read by name, as the 0.6–0.8 layouts have them; where the layouts differ (a staff
// member's group: `admin.admin_group_id` up to 0.8.x, the `admin_group_member` table after) both are handled.
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { refusalFor } from './version.ts';

type Id = number;
type Text = string | null;

export interface FbAdminGroup { id: Id; name: Text }
export interface FbAdmin { id: Id; email: Text; name: Text; status: Text; api_token: Text; group_id: Id | null; created_at: Text; updated_at: Text }
export interface FbClientGroup { id: Id; title: Text }
export interface FbClient {
  id: Id; client_group_id: Id | null; email: Text; pass: Text; status: Text; email_approved: number | null; tax_exempt: number | null;
  first_name: Text; last_name: Text; phone_cc: Text; phone: Text; company: Text; company_vat: Text; address_1: Text; address_2: Text;
  city: Text; state: Text; postcode: Text; country: Text; currency: Text; api_token: Text; created_at: Text; updated_at: Text;
}
export interface FbTax { id: Id; name: Text; country: Text; state: Text; taxrate: Text }
export interface FbProduct {
  id: Id; product_payment_id: Id | null; title: Text; slug: Text; description: Text; status: Text; hidden: number | null; setup: Text;
  config: Text; type: Text; created_at: Text; updated_at: Text;
}
/** product_payment: `type` and, per period prefix (w, m, q, b, a, bia, tria), `<p>_price`, `<p>_setup_price`, `<p>_enabled`. */
export type FbProductPayment = { id: Id; type: Text; once_price: Text; once_setup_price: Text } & Record<string, string | number | null>;
export interface FbOrder {
  id: Id; client_id: Id | null; product_id: Id | null; title: Text; currency: Text; service_id: Id | null; service_type: Text; period: Text;
  quantity: number | null; price: number | string | null; status: Text; reason: Text; notes: Text; config: Text; expires_at: Text;
  activated_at: Text; suspended_at: Text; canceled_at: Text; created_at: Text; updated_at: Text;
}
export interface FbApiKey { id: Id; client_id: Id | null; api_key: Text; config: Text; created_at: Text; updated_at: Text }
export interface FbInvoice {
  id: Id; client_id: Id | null; serie: Text; nr: Text; hash: Text; currency: Text; status: Text; seller_company: Text; seller_company_vat: Text;
  seller_address: Text; seller_email: Text; buyer_first_name: Text; buyer_last_name: Text; buyer_company: Text; buyer_company_vat: Text;
  buyer_address: Text; buyer_city: Text; buyer_state: Text; buyer_country: Text; buyer_zip: Text; buyer_email: Text; taxname: Text;
  taxrate: Text; due_at: Text; paid_at: Text; created_at: Text; updated_at: Text;
}
export interface FbInvoiceItem {
  id: Id; invoice_id: Id; type: Text; rel_id: Text; task: Text; status: Text; title: Text; period: Text; quantity: number | null;
  price: number | string | null; taxed: number | null;
}
export interface FbTransaction {
  id: Id; invoice_id: Id | null; gateway: Text; txn_id: Text; amount: Text; currency: Text; type: Text; status: Text; error: Text; note: Text; created_at: Text;
}

export interface FbData {
  lastPatch: string;
  defaultCurrency: string | null;
  currencies: string[];
  adminGroups: FbAdminGroup[];
  admins: FbAdmin[];
  clientGroups: FbClientGroup[];
  clients: FbClient[];
  /** Sum of client_balance per client, as decimal text (imported as credit-ledger entries, apply.ts importBalance). */
  balances: Array<{ client_id: Id; amount: string }>;
  taxes: FbTax[];
  products: FbProduct[];
  payments: FbProductPayment[];
  orders: FbOrder[];
  apiKeys: FbApiKey[];
  invoices: FbInvoice[];
  items: FbInvoiceItem[];
  transactions: FbTransaction[];
}

/** The source could not be read as a supported FOSSBilling database: the message says why, naming the version. */
export class UnsupportedSource extends Error {}

export async function connectSource(url: string): Promise<Connection> {
  const mysql = await import('mysql2/promise');
  // dateStrings: DATETIMEs as written (no local time-zone shift); DECIMALs stay strings (exact money).
  return mysql.createConnection({ uri: url, dateStrings: true, supportBigNumbers: true, decimalNumbers: false, multipleStatements: false });
}

async function rows<T>(db: Connection, sql: string): Promise<T[]> {
  const [result] = await db.query<RowDataPacket[]>(sql);
  return result as unknown as T[];
}

/** Reads everything the import uses, after checking the version; throws UnsupportedSource with the reason. */
export async function readSource(db: Connection): Promise<FbData> {
  const tables = new Set((await rows<{ name: string }>(db, 'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()')).map((row) => row.name));
  const lastPatch = tables.has('setting')
    ? ((await rows<{ value: string | null }>(db, "SELECT value FROM setting WHERE param = 'last_patch' LIMIT 1"))[0]?.value ?? null)
    : null;
  const refusal = refusalFor(lastPatch);
  if (refusal !== null) throw new UnsupportedSource(refusal);
  for (const table of ['admin', 'client', 'client_order', 'product', 'product_payment', 'invoice', 'invoice_item', 'transaction', 'currency']) {
    if (!tables.has(table)) throw new UnsupportedSource(`The FOSSBilling database has no \`${table}\` table: it is damaged or not FOSSBilling 0.6–0.8.`);
  }
  const adminColumns = new Set((await rows<{ name: string }>(db, "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'admin'")).map((row) => row.name));
  // Up to 0.8.x a staff member has one group on its row; later layouts keep memberships in admin_group_member.
  const groupOf = adminColumns.has('admin_group_id')
    ? 'a.admin_group_id'
    : tables.has('admin_group_member')
      ? '(SELECT MIN(m.admin_group_id) FROM admin_group_member m WHERE m.admin_id = a.id)'
      : 'NULL';
  // The cron pseudo-account (role `cron` in 0.6/0.7, a system_name in 0.8) is FOSSBilling's own, not a person.
  const notSystem = adminColumns.has('system_name') ? 'a.system_name IS NULL' : adminColumns.has('role') ? "COALESCE(a.role, '') <> 'cron'" : '1 = 1';
  const currencies = await rows<{ code: string | null; is_default: number | null }>(db, 'SELECT code, is_default FROM currency ORDER BY id');
  return {
    lastPatch: lastPatch ?? '',
    defaultCurrency: currencies.find((row) => row.is_default === 1)?.code?.toUpperCase() ?? null,
    currencies: currencies.flatMap((row) => (row.code === null ? [] : [row.code.toUpperCase()])),
    adminGroups: tables.has('admin_group') ? await rows(db, 'SELECT id, name FROM admin_group ORDER BY id') : [],
    admins: await rows(db, `SELECT a.id, a.email, a.name, a.status, a.api_token, ${groupOf} AS group_id, a.created_at, a.updated_at FROM admin a WHERE ${notSystem} ORDER BY a.id`),
    clientGroups: tables.has('client_group') ? await rows(db, 'SELECT id, title FROM client_group ORDER BY id') : [],
    clients: await rows(
      db,
      `SELECT id, client_group_id, email, pass, status, email_approved, tax_exempt, first_name, last_name, phone_cc, phone, company, company_vat,
        address_1, address_2, city, state, postcode, country, currency, api_token, created_at, updated_at FROM client ORDER BY id`,
    ),
    balances: tables.has('client_balance')
      ? await rows(db, 'SELECT client_id, CAST(SUM(amount) AS CHAR) AS amount FROM client_balance WHERE client_id IS NOT NULL GROUP BY client_id ORDER BY client_id')
      : [],
    taxes: tables.has('tax') ? await rows(db, 'SELECT id, name, country, state, taxrate FROM tax ORDER BY id') : [],
    products: await rows(db, 'SELECT id, product_payment_id, title, slug, description, status, hidden, setup, config, type, created_at, updated_at FROM product ORDER BY id'),
    payments: await rows(db, 'SELECT * FROM product_payment ORDER BY id'),
    orders: await rows(
      db,
      `SELECT id, client_id, product_id, title, currency, service_id, service_type, period, quantity, CAST(price AS CHAR) AS price, status, reason, notes,
        config, expires_at, activated_at, suspended_at, canceled_at, created_at, updated_at FROM client_order ORDER BY id`,
    ),
    // The API key module creates its table when installed: no table, no keys.
    apiKeys: tables.has('service_apikey') ? await rows(db, 'SELECT id, client_id, api_key, config, created_at, updated_at FROM service_apikey ORDER BY id') : [],
    invoices: await rows(
      db,
      `SELECT id, client_id, serie, nr, hash, currency, status, seller_company, seller_company_vat, seller_address, seller_email, buyer_first_name,
        buyer_last_name, buyer_company, buyer_company_vat, buyer_address, buyer_city, buyer_state, buyer_country, buyer_zip, buyer_email, taxname,
        taxrate, due_at, paid_at, created_at, updated_at FROM invoice ORDER BY id`,
    ),
    // DOUBLE prices as text: MySQL prints the stored double's shortest form, which is what FOSSBilling wrote.
    items: await rows(db, 'SELECT id, invoice_id, type, rel_id, task, status, title, period, quantity, CAST(price AS CHAR) AS price, taxed FROM invoice_item WHERE invoice_id IS NOT NULL ORDER BY invoice_id, id'),
    transactions: await rows(
      db,
      `SELECT t.id, t.invoice_id, ${tables.has('pay_gateway') ? '(SELECT g.gateway FROM pay_gateway g WHERE g.id = t.gateway_id)' : 'NULL'} AS gateway, t.txn_id,
        t.amount, t.currency, t.type, t.status, t.error, t.note, t.created_at FROM \`transaction\` t ORDER BY t.id`,
    ),
  };
}
