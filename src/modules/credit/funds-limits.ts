// FOSSBilling's funds_min_amount and funds_max_amount are amounts of the default currency (settings have one
// currency); a top-up in another currency is held to them converted at the current rate, rounded once.
import { errors } from '../../platform/errors.ts';
import { formatMoney, parseMoney } from '../../lib/money.ts';
import { amountIn, type SaleCurrency } from '../currency/selling.ts';

export interface FundsSettings {
  fundsMin(): string | null;
  fundsMax(): string | null;
}

/** 422 naming `amount` when a top-up of `amount` (minor units of `sale`'s currency) is outside the limits. */
export function checkFundsLimits(amount: number, sale: SaleCurrency, settings: FundsSettings): void {
  const limit = (text: string | null, name: string): number | null => (text === null ? null : amountIn(parseMoney(text, name, sale.defaultMinorUnit), sale));
  const min = limit(settings.fundsMin(), 'funds_min_amount');
  const max = limit(settings.fundsMax(), 'funds_max_amount');
  if (min !== null && amount < min) throw errors.invalid('amount', `must be at least ${formatMoney(min, sale.minorUnit)} ${sale.code}`);
  if (max !== null && amount > max) throw errors.invalid('amount', `must not be more than ${formatMoney(max, sale.minorUnit)} ${sale.code}`);
}
