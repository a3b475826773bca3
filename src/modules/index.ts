// The module registry: every API module the gateway serves. Add a module here and nowhere in http/.
import type { ModuleApi } from '../platform/action.ts';
import { accountProfileApi } from './account/api.ts';
import { recoveryClientApi, recoveryProfileApi, recoveryStaffApi } from './account/recovery-api.ts';
import { cartApi } from './cart/api.ts';
import { clientApi } from './client/api.ts';
import { cronApi } from './cron/api.ts';
import { emailApi } from './email/api.ts';
import { invoiceApi } from './invoice/api.ts';
import { orderApi } from './order/api.ts';
import { paymentMethodApi } from './payment/api.ts';
import { productApi } from './product/api.ts';
import { profileApi } from './profile/api.ts';
import { serviceApiKeyApi } from './serviceapikey/api.ts';
import { sessionApi } from './session/api.ts';
import { staffApi } from './staff/api.ts';
import { systemApi } from './system/api.ts';
import { webhookApi } from './webhook/api.ts';

export const modules: readonly ModuleApi[] = [
  systemApi,
  staffApi,
  clientApi,
  profileApi,
  productApi,
  cartApi,
  orderApi,
  invoiceApi,
  cronApi,
  serviceApiKeyApi,
  paymentMethodApi,
  emailApi,
  accountProfileApi,
  recoveryClientApi,
  recoveryStaffApi,
  recoveryProfileApi,
  webhookApi,
  sessionApi,
];
