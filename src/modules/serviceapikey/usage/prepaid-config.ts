// A prepaid plan's options (issue 24 item 2): `config.prepaid: true` draws the usage beyond each meter's `included`
// units from the client's balance as it is measured (usage/prepaid-draw.ts) instead of invoicing it at the close, and
// check refuses the keys with NO_CREDIT once the balance is at zero — or at −`allow_negative` when the plan lets it go
// below zero. Validated when the product is saved (422 naming the field).
//
// Decisions where the issue is silent:
// - `allow_negative` is a decimal amount of the instance's currency with up to 6 decimals (as prices are), stored as
//   sent in its canonical form ("5.00" stays "5.00", 5 becomes "5"); it is compared in micro-units, so no rounding;
// - `allow_negative` without `prepaid: true` is refused (it would mean nothing), and so is `prepaid: false` with it;
// - `prepaid: false` stores nothing: a plan is prepaid or it is not.
import { errors } from '../../../platform/errors.ts';
import { priceMicros } from '../../../lib/usage-pricing.ts';

/** The prepaid options as stored in a product's config and a key's options (usage-plan.ts UsageOptions). */
export interface PrepaidOptions {
  prepaid?: true;
  allow_negative?: string;
}

const blank = (value: unknown): boolean => value === undefined || value === null || value === '';
const AMOUNT = /^\d{1,12}(?:\.\d{1,6})?$/;

/** Validates `config.prepaid` and `config.allow_negative`; returns the options to store (none for a plan that is not prepaid). */
export function normalizePrepaid(config: Record<string, unknown>): PrepaidOptions {
  const prepaid = config.prepaid;
  if (!blank(prepaid) && typeof prepaid !== 'boolean') throw errors.invalid('config.prepaid', 'must be true or false');
  const allow = config.allow_negative;
  if (blank(allow)) return prepaid === true ? { prepaid: true } : {};
  if (prepaid !== true) throw errors.invalid('config.allow_negative', 'is read only by prepaid plans (set prepaid: true)');
  const text = typeof allow === 'number' && Number.isFinite(allow) ? String(allow) : allow;
  if (typeof text !== 'string' || !AMOUNT.test(text)) throw errors.invalid('config.allow_negative', 'must be an amount of 0 or more with at most 6 decimals, e.g. "5.00"');
  return { prepaid: true, allow_negative: text };
}

/** A key's prepaid floor: −allow_negative in micro-units of the currency (0n when not set), or null when not prepaid. */
export function prepaidFloorMicros(options: PrepaidOptions): bigint | null {
  if (options.prepaid !== true) return null;
  return options.allow_negative === undefined ? 0n : -priceMicros(options.allow_negative);
}
