// A product's free trial (issue 24 item 7): `config.trial = {days, requires_card, included?: {<meter>: units}}`.
// Pure: validated when the product is saved (InvalidInput → 422 naming the field), read again when an order starts.
import { InvalidInput } from './invalid-input.ts';

export interface TrialTerms {
  days: number;
  requires_card: boolean;
  /** Units per meter (`calls` is the built-in one) included during the trial instead of the plan's. */
  included?: Record<string, number>;
}

/** A trial longer than a year is a discount, not a trial. */
export const MAX_TRIAL_DAYS = 365;
/** How long before the end the reminder mail and `order.trial_will_end` go out. */
export const TRIAL_REMINDER_DAYS = 3;
const METER_CODE = /^[a-z][a-z0-9_]{0,39}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The validated trial terms, or undefined when `value` is absent (null also removes a trial). */
export function normalizeTrial(value: unknown): TrialTerms | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new InvalidInput('config.trial', 'must be an object {days, requires_card, included?}');
  for (const field of Object.keys(value)) {
    if (!['days', 'requires_card', 'included'].includes(field)) throw new InvalidInput(`config.trial.${field}`, 'is not a trial option');
  }
  const { days, requires_card: card, included } = value;
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > MAX_TRIAL_DAYS) {
    throw new InvalidInput('config.trial.days', `must be a whole number of days from 1 to ${MAX_TRIAL_DAYS}`);
  }
  if (typeof card !== 'boolean') throw new InvalidInput('config.trial.requires_card', 'must be true or false');
  const terms: TrialTerms = { days, requires_card: card };
  if (included !== undefined) {
    if (!isObject(included)) throw new InvalidInput('config.trial.included', 'must be an object {<meter>: units}');
    const units: Record<string, number> = {};
    for (const [meter, amount] of Object.entries(included)) {
      if (!METER_CODE.test(meter)) throw new InvalidInput(`config.trial.included.${meter}`, 'is not a meter code');
      if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 0) {
        throw new InvalidInput(`config.trial.included.${meter}`, 'must be a whole number of units, 0 or more');
      }
      units[meter] = amount;
    }
    terms.included = units;
  }
  return terms;
}

/** The trial of a saved config, or null (a config saved before trials, or one the rules now refuse, has none). */
export function trialOf(config: Record<string, unknown>): TrialTerms | null {
  try {
    return normalizeTrial(config.trial) ?? null;
  } catch {
    return null;
  }
}

/**
 * The config an order runs on during its trial: the trial's included units replace the plan's — `calls` the
 * built-in meter's `included`, any other code the `included` of the plan's meter of that code.
 */
export function trialConfig(config: Record<string, unknown>, trial: TrialTerms): Record<string, unknown> {
  if (trial.included === undefined) return config;
  const units = trial.included;
  const out: Record<string, unknown> = { ...config };
  if (units.calls !== undefined) out.included = units.calls;
  if (Array.isArray(config.meters)) {
    out.meters = config.meters.map((meter: unknown) =>
      isObject(meter) && typeof meter.code === 'string' && units[meter.code] !== undefined ? { ...meter, included: units[meter.code] } : meter,
    );
  }
  return out;
}

/** "7-day free trial, no card needed": the plans page's wording, with whether a card is asked for. */
export function trialText(trial: TrialTerms): string {
  return `${trial.days}-day free trial, ${trial.requires_card ? 'card required' : 'no card needed'}`;
}

/**
 * The reason an order is suspended with when its trial ended unpaid; the key check answers `TRIAL_ENDED` for it
 * (instead of NOT_ACTIVE) until the first invoice is paid.
 */
export const TRIAL_ENDED_REASON = 'Free trial ended';
