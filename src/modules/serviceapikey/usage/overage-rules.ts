// The prices and counts of the usage options (CONTRACT §12), shared by the plan's top-level options (usage-plan.ts) and
// its meters (meters-config.ts): whole counts of uses, decimal prices with up to 6 decimals, and the overage rules.
// Each throws a 422 naming the field it was given.
import { errors } from '../../../platform/errors.ts';
import type { GraduatedTier, OverageRule } from '../../../lib/usage-pricing.ts';

export const MAX_USES = 1_000_000_000_000;
const MAX_TIERS = 20;
const PRICE_TEXT = /^\d{1,12}(?:\.\d+)?$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A whole number of uses from `min` to 10^12 (or its digits as a string), else a 422 naming `param`. */
export function count(value: unknown, param: string, min: number): number {
  const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < min || number > MAX_USES) {
    throw errors.invalid(param, `must be an integer from ${min} to ${MAX_USES}`);
  }
  return number;
}

/** A price: a decimal string (or number) with at most 6 decimals, not negative; returned as its canonical string. */
function price(value: unknown, param: string): string {
  let text: string;
  if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else if (typeof value === 'string') text = value.trim();
  else throw errors.invalid(param, 'must be a decimal string such as "0.01"');
  if (text.startsWith('-')) throw errors.invalid(param, 'must not be negative');
  if (!PRICE_TEXT.test(text)) throw errors.invalid(param, 'must be a decimal string such as "0.01"');
  const [whole = '0', fraction = ''] = text.split('.');
  const trimmed = fraction.replace(/0+$/, '');
  if (trimmed.length > 6) throw errors.invalid(param, 'must have at most 6 decimals');
  const integer = whole.replace(/^0+(?=\d)/, '');
  return trimmed === '' ? integer : `${integer}.${trimmed}`;
}

/** Graduated or volume tiers: ascending `up_to`s, the last one null (it prices every unit beyond the others). */
function tiersOf(value: Record<string, unknown>, param: string): GraduatedTier[] {
  const tiers = value.tiers;
  if (!Array.isArray(tiers) || tiers.length === 0) throw errors.invalid(`${param}.tiers`, 'must be a non-empty list of tiers');
  if (tiers.length > MAX_TIERS) throw errors.invalid(`${param}.tiers`, `must have at most ${MAX_TIERS} tiers`);
  const out: GraduatedTier[] = [];
  let previous = 0;
  tiers.forEach((tier: unknown, index) => {
    const at = `${param}.tiers[${index}]`;
    if (!isPlainObject(tier)) throw errors.invalid(at, 'must be an object {up_to, unit_price, flat_price?}');
    const last = index === tiers.length - 1;
    let upTo: number | null = null;
    if (tier.up_to === null || tier.up_to === undefined || tier.up_to === '') {
      if (!last) throw errors.invalid(`${at}.up_to`, 'may be null only in the last tier');
    } else {
      upTo = count(tier.up_to, `${at}.up_to`, 1);
      if (upTo <= previous) throw errors.invalid(`${at}.up_to`, `must be greater than the previous tier's up_to (${previous})`);
      if (last) throw errors.invalid(`${at}.up_to`, 'must be null in the last tier (it prices every use beyond the others)');
      previous = upTo;
    }
    const normalized: GraduatedTier = { up_to: upTo, unit_price: price(tier.unit_price, `${at}.unit_price`) };
    if (tier.flat_price !== undefined && tier.flat_price !== null && tier.flat_price !== '') normalized.flat_price = price(tier.flat_price, `${at}.flat_price`);
    out.push(normalized);
  });
  return out;
}

/**
 * An overage rule (CONTRACT §12). `volume` is offered only where the caller says so: a meter's overage accepts it
 * (issue 23), the top-level `calls` overage keeps §12's three modes, whose words (lib/usage-terms.ts) show them.
 */
export function normalizeOverage(value: unknown, param: string, modes: { volume: boolean } = { volume: false }): OverageRule {
  if (!isPlainObject(value)) throw errors.invalid(param, 'must be an object with a mode');
  switch (value.mode) {
    case 'per_unit':
      return { mode: 'per_unit', unit_price: price(value.unit_price, `${param}.unit_price`) };
    case 'package':
      return {
        mode: 'package',
        package_size: count(value.package_size, `${param}.package_size`, 1),
        package_price: price(value.package_price, `${param}.package_price`),
      };
    case 'graduated':
      return { mode: 'graduated', tiers: tiersOf(value, param) };
    case 'volume':
      if (modes.volume) return { mode: 'volume', tiers: tiersOf(value, param) };
      throw errors.invalid(`${param}.mode`, 'must be per_unit, package or graduated (volume is offered on meters)');
    default:
      throw errors.invalid(`${param}.mode`, modes.volume ? 'must be per_unit, package, graduated or volume' : 'must be per_unit, package or graduated');
  }
}
