// system: the periods catalogue and the API version; the settings staff edit, the company details, and the country
// and phone-code lists the forms use (CONTRACT §8).
import { Type, type TSchema } from '@sinclair/typebox';
import { adminAction, guestAction, type ModuleApi } from '../../http/action.ts';
import { PERIOD_LABELS } from '../../lib/periods.ts';
import { VERSION } from '../../version.ts';
import { countryNames, phoneCodes } from './countries.ts';
import { SETTING_NAMES, SETTINGS } from './settings-catalogue.ts';

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

export const systemApi: ModuleApi = {
  name: 'system',
  admin: {
    settings_get: adminAction({
      params: NO_PARAMS,
      permission: 'system.manage',
      summary: 'Every setting; secrets only as <name>_set (never their value)',
      handler: (_params, { services }) => services.settings.all(),
    }),
    settings_update: adminAction({
      // The secret settings (SMTP password, Stripe keys) travel in it: never in a URL.
      postOnly: true,
      params: Type.Object(settingParams),
      permission: 'system.manage',
      summary: 'Saves the settings given (all checked first); a secret set to "" is cleared',
      async handler(params, { services }) {
        await services.settings.update(params);
        return true;
      },
    }),
  },
  guest: {
    periods: guestAction({ params: NO_PARAMS, summary: 'Billing periods offered by default', handler: () => PERIOD_LABELS }),
    version: guestAction({ params: NO_PARAMS, summary: 'Semantic version of the API', handler: () => VERSION }),
    company: guestAction({
      params: NO_PARAMS,
      summary: "The seller's details: {name, email, address_1..3, city, postcode, country, vat_number, logo_url}",
      handler: (_params, { services }) => services.settings.company(),
    }),
    countries: guestAction({ params: NO_PARAMS, summary: 'ISO 3166-1 alpha-2 code → English name', handler: () => countryNames() }),
    phone_codes: guestAction({ params: NO_PARAMS, summary: 'ISO 3166-1 alpha-2 code → international calling code', handler: () => phoneCodes() }),
  },
};
