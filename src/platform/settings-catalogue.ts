// The settings staff edit in the database (CONTRACT §8): their names, kinds and defaults. A setting's environment
// variable is its name in upper case (`company_name` ← COMPANY_NAME, `payment_instructions` ← PAYMENT_INSTRUCTIONS):
// the environment gives the default, a value saved by staff wins over it. Pure: no I/O.
// In platform/ because src/config.ts reads the environment's defaults through it before any module exists; the
// system module stores and serves the values (src/modules/system/service.ts).
import { isoCountries } from './iso-countries.ts';
import { errors } from './errors.ts';
import { InvalidInput } from '../lib/invalid-input.ts';
import { normalizeOriginList } from '../lib/origins.ts';

export type SettingKind = 'amount' | 'text' | 'longtext' | 'email' | 'url' | 'country' | 'prefix' | 'bool' | 'counter' | 'days' | 'offsets' | 'origins' | 'secret';

export interface SettingSpec {
  kind: SettingKind;
  /** The default when neither staff nor the environment set one ('' = none). */
  fallback: string;
}

export const SETTINGS = {
  /** Unset by default: the client area, mails and the TOTP issuer show the operator's name once set, never ours. */
  company_name: { kind: 'text', fallback: '' },
  company_email: { kind: 'email', fallback: '' },
  company_address_1: { kind: 'text', fallback: '' },
  company_address_2: { kind: 'text', fallback: '' },
  company_address_3: { kind: 'text', fallback: '' },
  company_city: { kind: 'text', fallback: '' },
  company_postcode: { kind: 'text', fallback: '' },
  company_country: { kind: 'country', fallback: '' },
  company_vat_number: { kind: 'text', fallback: '' },
  company_logo_url: { kind: 'url', fallback: '' },
  invoice_prefix: { kind: 'prefix', fallback: 'INV-' },
  invoice_next_number: { kind: 'counter', fallback: '1' },
  /** Credit notes' own gapless sequence (issue 24): `<prefix><n>`, e.g. CN-1. */
  credit_note_prefix: { kind: 'prefix', fallback: 'CN-' },
  payment_instructions: {
    kind: 'longtext',
    fallback: 'Pay by bank transfer and quote the reference given with the invoice. Staff confirm the payment.',
  },
  require_email_verification: { kind: 'bool', fallback: 'false' },
  /** The client area's footer links to the staff login only when this is on (issue 21: the operator's brand). */
  show_staff_login_link: { kind: 'bool', fallback: 'false' },
  auto_pay_default: { kind: 'bool', fallback: 'true' },
  /** Days after a failed off-session charge at which it is tried again. */
  dunning_retry_days: { kind: 'days', fallback: '1,3,5' },
  /** Reminder days relative to the due date: negative before it, positive after it (overdue). */
  invoice_reminder_days: { kind: 'offsets', fallback: '-3,-1,1,3,7' },
  /** Top-ups (client/invoice/funds_invoice, FOSSBilling's names): the smallest and largest amount; '' = no bound. */
  funds_min_amount: { kind: 'amount', fallback: '' },
  funds_max_amount: { kind: 'amount', fallback: '' },
  /** Renewal and overage invoices are paid from the client's balance when it covers them (issue 24). */
  credits_pay_invoices: { kind: 'bool', fallback: 'false' },
  /**
   * Origins allowed to frame the customer portal (issue 25, docs/portal.md), space- or comma-separated; also the only
   * origins a portal link's return_url may point at once set. '' (the default): the portal refuses to be framed.
   */
  portal_frame_ancestors: { kind: 'origins', fallback: '' },
  /** Days the audit log keeps an entry (issue 25; docs/audit-log.md): the scheduler prunes older ones. 2 years. */
  audit_retention_days: { kind: 'counter', fallback: '730' },
  /** EU VAT (issue 26, docs/eu-vat.md): the EU rules decide taxes when on and company_country is a member state. */
  eu_vat: { kind: 'bool', fallback: 'false' },
  /** Prices include tax: the buyer pays the price shown and the tax is extracted from it. */
  tax_inclusive: { kind: 'bool', fallback: 'false' },
  /** The base URL of the EU's VIES REST API (its check-vat-number is appended). */
  vies_url: { kind: 'url', fallback: 'https://ec.europa.eu/taxation_customs/vies/rest-api' },
  /** A request header carrying the buyer's IP country, set by a proxy or CDN (e.g. CF-IPCountry); '' = no lookup. */
  ip_country_header: { kind: 'text', fallback: '' },
  stripe_secret_key: { kind: 'secret', fallback: '' },
  stripe_webhook_secret: { kind: 'secret', fallback: '' },
  smtp_password: { kind: 'secret', fallback: '' },
  /** Where mail leaves (smtp://user:pass@host:587 or smtps://…); SMTP_URL gives the default. Sealed: it holds a password. */
  smtp_url: { kind: 'secret', fallback: '' },
} as const satisfies Record<string, SettingSpec>;

/**
 * The shape a secret must have when staff store it, so a placeholder ("sk_live_…") or a key pasted into the wrong
 * field is refused with a 422 naming the field instead of breaking every payment later. Stripe's secret and
 * restricted keys are `sk_`/`rk_`, `test_`/`live_`, then letters and digits; its webhook signing secrets `whsec_`
 * and base64 text. Values from the environment are not refused (a start must not fail on them); the Settings page
 * shows which value is in force.
 */
const SECRET_SHAPES: Partial<Record<SettingName, { pattern: RegExp; problem: string }>> = {
  stripe_secret_key: {
    pattern: /^(sk|rk)_(test|live)_[A-Za-z0-9]{16,247}$/,
    problem: 'must be a Stripe secret or restricted key: sk_test_, sk_live_, rk_test_ or rk_live_ followed by letters and digits',
  },
  stripe_webhook_secret: {
    pattern: /^whsec_[A-Za-z0-9+/=]{16,250}$/,
    problem: 'must be a Stripe webhook signing secret: whsec_ followed by letters and digits',
  },
  smtp_url: {
    pattern: /^smtps?:\/\/[^\s/?#]+(:\d{1,5})?\/?(\?[^\s]*)?$/i,
    problem: 'must look like smtp://user:password@host:587 or smtps://user:password@host:465',
  },
};

export type SettingName = keyof typeof SETTINGS;
export type SecretName = { [K in SettingName]: (typeof SETTINGS)[K]['kind'] extends 'secret' ? K : never }[SettingName];
export type PublicName = Exclude<SettingName, SecretName>;

/** What `get` returns for each kind. */
type ValueOf<K extends SettingKind> = K extends 'bool' ? boolean : K extends 'counter' ? number : K extends 'days' | 'offsets' ? number[] : string | null;
export type SettingValues = { [K in PublicName]: ValueOf<(typeof SETTINGS)[K]['kind']> };

export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];
export const SECRET_NAMES = SETTING_NAMES.filter((name) => SETTINGS[name].kind === 'secret') as SecretName[];
export const PUBLIC_NAMES = SETTING_NAMES.filter((name) => SETTINGS[name].kind !== 'secret') as PublicName[];

export function isCountryCode(code: string): boolean {
  return /^[A-Z]{2}$/.test(code) && isoCountries.isValid(code);
}

function parseList(name: string, text: string, min: number, max: number, ascending: boolean): string {
  const parts = text.split(',').map((part) => part.trim());
  if (parts.length > 10 || parts.some((part) => !/^-?\d{1,3}$/.test(part))) {
    throw errors.invalid(name, `must be a comma-separated list of whole days (at most 10)`);
  }
  const days = parts.map(Number);
  if (days.some((day) => day < min || day > max)) throw errors.invalid(name, `must hold days between ${min} and ${max}`);
  if (new Set(days).size !== days.length) throw errors.invalid(name, 'must not repeat a day');
  if (ascending && days.some((day, i) => i > 0 && day <= days[i - 1]!)) throw errors.invalid(name, 'must list the days in increasing order');
  return days.join(',');
}

/**
 * A value as staff (or the environment) give it, checked and normalised to the text stored; 422 naming the setting
 * otherwise. Booleans arrive as booleans, 0/1 or form strings; numbers as numbers or digit strings.
 */
export function normalizeSetting(name: SettingName, value: unknown, origin: 'staff' | 'environment' = 'staff'): string {
  const spec: SettingSpec = SETTINGS[name];
  if (spec.kind === 'bool') {
    if (value === true || value === 1 || (typeof value === 'string' && /^(1|true|on|yes)$/i.test(value.trim()))) return 'true';
    if (value === false || value === 0 || (typeof value === 'string' && /^(0|false|off|no|)$/i.test(value.trim()))) return 'false';
    throw errors.invalid(name, 'must be a boolean');
  }
  if (spec.kind === 'counter') {
    const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
    if (!/^\d{1,12}$/.test(text) || Number(text) < 1) throw errors.invalid(name, 'must be a whole number of at least 1');
    return String(Number(text));
  }
  if (typeof value !== 'string') throw errors.invalid(name, 'must be a string');
  const text = value.trim();
  switch (spec.kind) {
    case 'text':
      if (text.length > 255) throw errors.invalid(name, 'must be at most 255 characters');
      return text;
    case 'amount':
      if (text !== '' && !/^\d{1,10}(\.\d{1,4})?$/.test(text)) throw errors.invalid(name, 'must be an amount such as "10.00", or empty for none');
      return text;
    case 'longtext':
      if (text.length > 10_000) throw errors.invalid(name, 'must be at most 10000 characters');
      return text;
    case 'email':
      if (text !== '' && (text.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text))) throw errors.invalid(name, 'must be an e-mail address');
      return text;
    case 'url':
      if (text !== '' && (text.length > 1000 || !/^https?:\/\/[^\s]+$/i.test(text))) throw errors.invalid(name, 'must be an http(s) URL');
      return text;
    case 'country':
      if (text !== '' && !isCountryCode(text.toUpperCase())) throw errors.invalid(name, 'must be an ISO 3166-1 alpha-2 country code');
      return text.toUpperCase();
    case 'prefix':
      if (!/^[A-Za-z0-9/_.#-]{0,20}$/.test(text)) throw errors.invalid(name, 'must be at most 20 letters, digits or - _ / . #');
      return text;
    case 'days':
      return parseList(name, text, 1, 365, true);
    case 'offsets':
      return text === '' ? '' : parseList(name, text, -365, 365, true);
    case 'origins':
      try {
        return normalizeOriginList(name, text);
      } catch (error) {
        // The catalogue throws ApiErrors (config.ts reads the environment's values through it and expects one).
        if (error instanceof InvalidInput) throw errors.invalid(error.param, error.problem);
        throw error;
      }
    default:
      // secret: stored sealed; '' clears the stored value.
      if (value.length > 1000) throw errors.invalid(name, 'must be at most 1000 characters');
      if (origin === 'staff' && text !== '') {
        const shape = SECRET_SHAPES[name];
        if (shape !== undefined && !shape.pattern.test(text)) throw errors.invalid(name, shape.problem);
        // Surrounding spaces from a paste are never part of a key.
        if (shape !== undefined) return text;
      }
      return value;
  }
}

/** The stored text as the value `get` returns. */
export function readSetting(name: SettingName, text: string): string | number | boolean | number[] | null {
  switch (SETTINGS[name].kind) {
    case 'bool':
      return text === 'true';
    case 'counter':
      return Number(text);
    case 'days':
    case 'offsets':
      return text === '' ? [] : text.split(',').map(Number);
    default:
      return text === '' ? null : text;
  }
}

/** Defaults from the environment: each setting's upper-cased name. Throws (a 422 ApiError) on a malformed value. */
export function settingDefaultsFromEnv(env: Record<string, string | undefined>): Partial<Record<SettingName, string>> {
  const out: Partial<Record<SettingName, string>> = {};
  for (const name of SETTING_NAMES) {
    const raw = env[name.toUpperCase()];
    if (raw === undefined || raw.trim() === '') continue;
    out[name] = normalizeSetting(name, raw, 'environment');
  }
  return out;
}
