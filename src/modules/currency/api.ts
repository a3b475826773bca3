// currency: FOSSBilling's Currency module (issue 26) — the instance's currencies, the default one, the rates staff
// set, and the guest's pairs/get/format. Permissions as FOSSBilling names them: currency.view, create, edit, delete,
// set_default, update_rates.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { Done, PageOf } from '../../platform/schemas.ts';
import { paginationParams } from '../../lib/paginator.ts';
import type { CurrencyService } from './service.ts';
import { CurrencyResult, Pairs, RateResult } from './results.ts';
import { formatGuestPrice } from './guest-format.ts';

/** The services this module's actions use. */
export interface CurrencyNeeds {
  currencies: Pick<
    CurrencyService,
    'list' | 'pairs' | 'isoPairs' | 'get' | 'getDefault' | 'create' | 'update' | 'updateRates' | 'setDefault' | 'delete' | 'rates'
  >;
}

const { adminAction, guestAction } = actionsFor<CurrencyNeeds>();

const Code = Type.String({ minLength: 1, maxLength: 16 });
const ByCode = Type.Object({ code: Code });
const RateInput = Type.Union([Type.String({ maxLength: 40 }), Type.Number()]);
const AmountInput = Type.Union([Type.String({ maxLength: 40 }), Type.Number()]);
// A null counts as "not sent" at the gateway: "" is what clears a setting (as in FOSSBilling's forms).
const settingsParams = {
  is_rate_manual: Type.Optional(Type.Boolean()),
  format_pattern: Type.Optional(Type.String({ maxLength: 400 })),
  fraction_digits: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 6 }), Type.Literal('')])),
  price_rounding: Type.Optional(Type.Union([Type.Object({ step: AmountInput, ending: AmountInput }), Type.Literal('')])),
};

export const currencyApi: ModuleApi<CurrencyNeeds> = {
  name: 'currency',
  admin: {
    get_list: adminAction({
      params: Type.Object({ search: Type.Optional(Type.String({ maxLength: 100 })), ...paginationParams }),
      permission: 'currency.view',
      summary: 'The instance’s currencies by code, optionally those whose code contains `search`',
      result: PageOf(CurrencyResult),
      handler: (params, { services }) => services.currencies.list(params),
    }),
    get_pairs: adminAction({
      params: Type.Object({}),
      permission: 'currency.view',
      summary: 'Every ISO 4217 currency that can be added, as {code: "CODE (Name)"}',
      result: Pairs,
      handler: (_params, { services }) => services.currencies.isoPairs(),
    }),
    get: adminAction({
      params: ByCode,
      permission: 'currency.view',
      summary: 'One currency by its code',
      result: CurrencyResult,
      handler: ({ code }, { services }) => services.currencies.get(code),
    }),
    get_default: adminAction({
      params: Type.Object({}),
      permission: 'currency.view',
      summary: 'The default currency (the one prices are set in, rate 1)',
      result: CurrencyResult,
      handler: (_params, { services }) => services.currencies.getDefault(),
    }),
    create: adminAction({
      params: Type.Object({ code: Code, conversion_rate: RateInput, ...settingsParams }),
      permission: 'currency.create',
      summary: 'Adds an ISO 4217 currency with its rate against the default (units of it per default unit); returns its code',
      result: Type.String(),
      handler: (params, { services, identity }) => services.currencies.create(params, identity.staff.id),
    }),
    update: adminAction({
      params: Type.Object({ code: Code, conversion_rate: Type.Optional(RateInput), ...settingsParams }),
      permission: 'currency.edit',
      summary: 'Changes a currency’s rate (kept in its history with the moment it was set), display or price rounding',
      result: Done,
      handler: (params, { services, identity }) => services.currencies.update(params, identity.staff.id),
    }),
    update_rates: adminAction({
      params: Type.Object({ rates: Type.Optional(Type.Record(Type.String({ maxLength: 16 }), RateInput, { maxProperties: 200 })) }),
      permission: 'currency.update_rates',
      summary: 'Sets several rates at once ({rates: {EUR: "0.92"}}), all or none; without `rates` nothing changes (no rate provider)',
      result: Done,
      handler: ({ rates }, { services, identity }) => services.currencies.updateRates(rates ?? {}, identity.staff.id),
    }),
    is_cron_enabled: adminAction({
      params: Type.Object({}),
      permission: 'currency.view',
      summary: 'Always false: Tollgate fetches no rates; staff set them',
      result: Type.Boolean(),
      handler: () => false,
    }),
    set_default: adminAction({
      params: ByCode,
      permission: 'currency.set_default',
      summary: 'Makes a currency the default; every rate is restated against it, so cross rates stay as set',
      result: Done,
      handler: ({ code }, { services, identity }) => services.currencies.setDefault(code, identity.staff.id),
    }),
    delete: adminAction({
      params: ByCode,
      permission: 'currency.delete',
      summary: 'Removes a currency; 409 for the default one or one in use by a client, order, invoice or balance',
      result: Done,
      handler: ({ code }, { services }) => services.currencies.delete(code),
    }),
    rate_get_list: adminAction({
      params: Type.Object({ code: Code, ...paginationParams }),
      permission: 'currency.view',
      summary: 'The rates a currency has had, newest first, each with its moment and the default it was against',
      result: PageOf(RateResult),
      handler: ({ code, ...page }, { services }) => services.currencies.rates(code, page),
    }),
  },
  guest: {
    get_pairs: guestAction({
      params: Type.Object({}),
      summary: 'The instance’s currencies as {code: name}',
      result: Pairs,
      handler: (_params, { services }) => services.currencies.pairs(),
    }),
    get: guestAction({
      params: Type.Object({ code: Type.Optional(Code) }),
      summary: 'A currency by code, or the default one without `code`',
      result: CurrencyResult,
      handler: ({ code }, { services }) => (code === undefined || code === '' ? services.currencies.getDefault() : services.currencies.get(code)),
    }),
    format: guestAction({
      params: Type.Object({
        code: Type.Optional(Code),
        price: Type.Optional(AmountInput),
        convert: Type.Optional(Type.Boolean()),
        without_currency: Type.Optional(Type.Boolean()),
      }),
      summary: 'A price as text ("$1,234.50"); with `convert` (default true) `price` is in the default currency and is converted as prices are',
      result: Type.String(),
      handler: (params, { services }) => formatGuestPrice(services.currencies, params),
    }),
  },
};
