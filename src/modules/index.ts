// The module registry: every URL module the gateway serves (`/api/{role}/<name>/{action}`), one entry each. Add a
// module here and nowhere in http/.
//
// Each module names the services its actions use (its `…Needs`); `ModuleServices` is all of them at once, and the
// composition root (src/services.ts) proves it builds them: a module that names a service nobody builds, or a method a
// service lacks, fails to compile there.
import type { ModuleApi } from '../platform/action.ts';
import { activityApi, type ActivityNeeds } from './activity/api.ts';
import { cartApi, type CartNeeds } from './cart/api.ts';
import { clientApi, type ClientNeeds } from './client/api.ts';
import { creditApi, type CreditNeeds } from './credit/api.ts';
import { cronApi, type CronNeeds } from './cron/api.ts';
import { currencyApi, type CurrencyNeeds } from './currency/api.ts';
import { emailApi, type EmailNeeds } from './email/api.ts';
import { invoiceApi, type InvoiceNeeds } from './invoice/api.ts';
import { orderApi, type OrderNeeds } from './order/api.ts';
import { paymentMethodApi, type PaymentMethodNeeds } from './payment/api.ts';
import { portalApi, type PortalNeeds } from './portal/api.ts';
import { productApi, type ProductNeeds } from './product/api.ts';
import { profileApi, type ProfileNeeds } from './profile/api.ts';
import { serviceApiKeyApi, type ApiKeyNeeds } from './serviceapikey/api.ts';
import { sessionApi } from './session/api.ts';
import { permissionCatalogue, type PermissionEntry } from './staff/permissions.ts';
import { staffApi, type StaffNeeds } from './staff/api.ts';
import { statsApi, type StatsNeeds } from './stats/api.ts';
import { systemApi, type SystemNeeds } from './system/api.ts';
import { USAGE_INGEST_PERMISSION, usageApi, type UsageNeeds } from './usage/api.ts';
import { webhookApi, type WebhookNeeds } from './webhook/api.ts';

/** Every service some module's actions use, as those modules name them. */
export type ModuleServices = SystemNeeds &
  StaffNeeds &
  ClientNeeds &
  ProfileNeeds &
  ProductNeeds &
  CartNeeds &
  OrderNeeds &
  InvoiceNeeds &
  CronNeeds &
  CreditNeeds &
  ApiKeyNeeds &
  PaymentMethodNeeds &
  EmailNeeds &
  WebhookNeeds &
  UsageNeeds &
  CurrencyNeeds &
  PortalNeeds &
  ActivityNeeds &
  StatsNeeds;

/** Which scopes of a customer-portal session open a client action (deny by default): the gateway asks once per route. */
export { portalScopesOf } from './portal/scopes.ts';

// The staff module lists every permission the admin actions ask for, its own included: computed here from the list
// below, the first time the action asks (by then the list exists).
let permissions: readonly PermissionEntry[] | undefined;

/**
 * The catalogue, plus the permissions an action checks in its handler rather than declares: `usage.ingest`, which
 * `admin/usage/ingest` cannot declare because verifier tokens (which hold only `serviceapikey.check`) call it too.
 */
function catalogueOf(served: readonly ModuleApi<ModuleServices>[]): PermissionEntry[] {
  const checkedInHandlers: PermissionEntry[] = [{ permission: USAGE_INGEST_PERMISSION, module: 'usage', actions: ['usage/ingest'] }];
  return [...permissionCatalogue(served), ...checkedInHandlers].toSorted((a, b) => a.permission.localeCompare(b.permission));
}

export const modules: readonly ModuleApi<ModuleServices>[] = [
  systemApi,
  staffApi(() => (permissions ??= catalogueOf(modules))),
  clientApi,
  profileApi,
  productApi,
  cartApi,
  orderApi,
  invoiceApi,
  creditApi,
  cronApi,
  serviceApiKeyApi,
  paymentMethodApi,
  emailApi,
  webhookApi,
  usageApi,
  currencyApi,
  activityApi,
  statsApi,
  sessionApi,
  portalApi,
];
