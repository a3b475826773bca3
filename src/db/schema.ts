// The database as Kysely sees it: the union of every module's tables. Each table's type lives in the tables.ts of the
// module that writes it (src/modules/<m>/tables.ts); a column a later migration added joins its table's interface there.
import type { AccountTables } from '../modules/account/tables.ts';
import type { ActivityTables } from '../modules/activity/tables.ts';
import type { CartTables } from '../modules/cart/tables.ts';
import type { ClientTables } from '../modules/client/tables.ts';
import type { CreditTables } from '../modules/credit/tables.ts';
import type { CronTables } from '../modules/cron/tables.ts';
import type { CurrencyTables } from '../modules/currency/tables.ts';
import type { EmailTables } from '../modules/email/tables.ts';
import type { InvoiceTables } from '../modules/invoice/tables.ts';
import type { OrderTables } from '../modules/order/tables.ts';
import type { OutboxTables } from '../modules/outbox/tables.ts';
import type { PaymentTables } from '../modules/payment/tables.ts';
import type { PortalTables } from '../modules/portal/tables.ts';
import type { ProductTables } from '../modules/product/tables.ts';
import type { ApiKeyTables } from '../modules/serviceapikey/tables.ts';
import type { SessionTables } from '../modules/session/tables.ts';
import type { StaffTables } from '../modules/staff/tables.ts';
import type { StatsTables } from '../modules/stats/tables.ts';
import type { SystemTables } from '../modules/system/tables.ts';
import type { UsageTables } from '../modules/usage/tables.ts';
import type { VatTables } from '../modules/vat/tables.ts';
import type { WebhookTables } from '../modules/webhook/tables.ts';
import type { ListCountsTables } from './list-counts-table.ts';

export type Database = AccountTables &
  ActivityTables &
  CartTables &
  ClientTables &
  CreditTables &
  CronTables &
  CurrencyTables &
  EmailTables &
  InvoiceTables &
  OrderTables &
  OutboxTables &
  PaymentTables &
  PortalTables &
  ProductTables &
  ApiKeyTables &
  SessionTables &
  StaffTables &
  StatsTables &
  SystemTables &
  UsageTables &
  VatTables &
  WebhookTables &
  ListCountsTables;
