// system: the periods catalogue and the API version; the settings staff edit, the company details, and the country
// and phone-code lists the forms use (CONTRACT §8).
import { Type, type TSchema } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { Done, Nullable } from '../../platform/schemas.ts';
import { PERIOD_LABELS } from '../../lib/periods.ts';
import { VERSION } from '../../platform/version.ts';
import { countryNames, phoneCodes } from './countries.ts';
import { PUBLIC_NAMES, SECRET_NAMES, SETTING_NAMES, SETTINGS } from '../../platform/settings-catalogue.ts';
import type { Config } from '../../config.ts';
import type { MailService } from '../email/service.ts';
import type { TaxService } from '../invoice/taxes.ts';
import type { SystemService } from './service.ts';
import type { Selling } from '../currency/selling.ts';

/** The services this module's actions use. */
export interface SystemNeeds {
  config: Pick<Config, 'publicUrl'>;
  /** The default currency (issue 26): what prices are in when a buyer has chosen none. */
  selling: Pick<Selling, 'defaultCode'>;
  settings: Pick<SystemService, 'all' | 'update' | 'get' | 'company'>;
  mail: Pick<MailService, 'releaseWaiting'>;
  taxes: Pick<TaxService, 'anyRule'>;
}

const { adminAction, guestAction } = actionsFor<SystemNeeds>();

const NO_PARAMS = Type.Object({});

// Every setting is an optional parameter of settings_update; the catalogue checks each value and names it on a 422.
const settingParams: Record<string, TSchema> = {};
for (const name of SETTING_NAMES) {
  const kind: string = SETTINGS[name].kind;
  settingParams[name] = Type.Optional(
    kind === 'bool'
      ? Type.Boolean()
      : kind === 'counter'
        ? Type.Union([Type.Integer({ minimum: 1, maximum: 999_999_999_999 }), Type.String({ maxLength: 12 })])
        : Type.String({ maxLength: 10_000 }),
  );
}

// settings_get answers each public setting as its kind reads (readSetting) and each secret only as `<name>_set`.
const settingResults: Record<string, TSchema> = {};
for (const name of PUBLIC_NAMES) {
  const kind: string = SETTINGS[name].kind;
  settingResults[name] =
    kind === 'bool'
      ? Type.Boolean()
      : kind === 'counter'
        ? Type.Integer()
        : kind === 'days' || kind === 'offsets'
          ? Type.Array(Type.Integer())
          : Nullable(Type.String());
}
for (const name of SECRET_NAMES) {
  settingResults[`${name}_set`] = Type.Boolean();
  settingResults[`${name}_source`] = Nullable(
    Type.Union([Type.Literal('stored'), Type.Literal('environment')], {
      description: "Whose value is in force: staff's stored one (beats the environment's), the environment's, or none (null)",
    }),
  );
}

const Text = Nullable(Type.String());
const Company = Type.Object({
  name: Text,
  email: Text,
  address_1: Text,
  address_2: Text,
  address_3: Text,
  city: Text,
  postcode: Text,
  country: Text,
  vat_number: Text,
  logo_url: Text,
  /** PUBLIC_URL without a trailing slash: the instance's base URL (links in mail, the SDK's baseUrl). */
  public_url: Type.String(),
  /** Whether the client area's footer links to the staff login (the `show_staff_login_link` setting). */
  show_staff_login_link: Type.Boolean(),
});
const CodeToText = Type.Record(Type.String(), Type.String());

export const systemApi: ModuleApi<SystemNeeds> = {
  name: 'system',
  admin: {
    settings_get: adminAction({
      params: NO_PARAMS,
      permission: 'system.manage',
      summary: 'Every setting; secrets only as <name>_set and <name>_source (stored, environment or null), never their value',
      result: Type.Object(settingResults),
      handler: (_params, { services }) => services.settings.all(),
    }),
    settings_update: adminAction({
      // The secret settings (SMTP password, Stripe keys) travel in it: never in a URL.
      postOnly: true,
      params: Type.Object(settingParams),
      permission: 'system.manage',
      summary:
        'Saves the settings given (all checked first; Stripe keys, the webhook secret and smtp_url for shape: 422 naming the field); a secret set to "" drops the stored value, so the environment\'s is in force again',
      result: Done,
      async handler(params, { services }) {
        await services.settings.update(params);
        // A mail server configured now: the messages that waited for one go out. Inside the action's transaction
        // (docs/audit-log.md) the saved URL is in force only after the commit, so the release is told it is saved, and
        // the sender is woken after the commit.
        if (typeof params.smtp_url === 'string' && params.smtp_url !== '') await services.mail.releaseWaiting({ serverSaved: true });
        return true;
      },
    }),
  },
  guest: {
    periods: guestAction({ params: NO_PARAMS, summary: 'Billing periods offered by default', result: CodeToText, handler: () => PERIOD_LABELS }),
    version: guestAction({ params: NO_PARAMS, summary: 'Semantic version of the API', result: Type.String(), handler: () => VERSION }),
    company: guestAction({
      params: NO_PARAMS,
      summary:
        "The seller's details: {name, email, address_1..3, city, postcode, country, vat_number, logo_url} (null when not set), public_url (this instance's base URL) and show_staff_login_link (the client area's footer)",
      result: Company,
      handler: async (_params, { services }) => ({
        ...(await services.settings.company()),
        public_url: services.config.publicUrl.replace(/\/+$/, ''),
        show_staff_login_link: await services.settings.get('show_staff_login_link'),
      }),
    }),
    // What a buyer's forms need before checkout (issue 21 items 3 and 8): the currency prices are in, and whether tax
    // rules exist (then sign-up and checkout need the billing country).
    billing: guestAction({
      params: NO_PARAMS,
      summary: 'The default currency prices are in (a buyer may choose another: guest/cart/set_currency), and whether tax applies (then checkout needs the billing country)',
      result: Type.Object({
        currency: Type.String({ description: 'ISO 4217 code' }),
        tax_applies: Type.Boolean({ description: 'A tax rule exists or the EU VAT rules apply: sign-up asks for the billing country, checkout refuses without one (422)' }),
        tax_inclusive: Type.Boolean({ description: 'Prices include tax ("incl. VAT"); else tax is added at checkout ("excl. VAT")' }),
      }),
      handler: async (_params, { services }) => ({ currency: await services.selling.defaultCode(), tax_applies: await services.taxes.anyRule(), tax_inclusive: await services.settings.get('tax_inclusive') }),
    }),
    countries: guestAction({ params: NO_PARAMS, summary: 'ISO 3166-1 alpha-2 code → English name', result: CodeToText, handler: () => countryNames() }),
    phone_codes: guestAction({ params: NO_PARAMS, summary: 'ISO 3166-1 alpha-2 code → international calling code', result: CodeToText, handler: () => phoneCodes() }),
  },
};
