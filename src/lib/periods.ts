// Billing periods: `<n><unit>` with unit D (1–90), W (1–52), M (1–24), Y (1–5). Adding a period is calendar
// arithmetic in UTC: 31 Jan + 1M = 28/29 Feb (the day is clamped to the target month's last day).

export const PERIOD_LABELS: Readonly<Record<string, string>> = {
  '1W': 'Every week',
  '1M': 'Every month',
  '3M': 'Every 3 months',
  '6M': 'Every 6 months',
  '1Y': 'Every year',
  '2Y': 'Every 2 years',
  '3Y': 'Every 3 years',
  '4Y': 'Every 4 years',
  '5Y': 'Every 5 years',
};

export type PeriodUnit = 'D' | 'W' | 'M' | 'Y';

export interface Period {
  count: number;
  unit: PeriodUnit;
}

const MAX: Record<PeriodUnit, number> = { D: 90, W: 52, M: 24, Y: 5 };

export function parsePeriod(code: string): Period | null {
  const match = /^([1-9]\d?)([DWMY])$/.exec(code);
  if (match === null) return null;
  const count = Number(match[1]);
  const unit = match[2] as PeriodUnit;
  return count <= MAX[unit] ? { count, unit } : null;
}

export function isPeriod(code: string): boolean {
  return parsePeriod(code) !== null;
}

function addMonths(date: Date, months: number): Date {
  const target = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1, date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(date.getUTCDate(), lastDay));
  return target;
}

export function addPeriod(date: Date, code: string): Date {
  const period = parsePeriod(code);
  if (period === null) throw new Error(`Not a period code: ${code}`);
  switch (period.unit) {
    case 'D':
      return new Date(date.getTime() + period.count * 86_400_000);
    case 'W':
      return new Date(date.getTime() + period.count * 7 * 86_400_000);
    case 'M':
      return addMonths(date, period.count);
    default:
      return addMonths(date, period.count * 12);
  }
}

export function periodLabel(code: string): string {
  const known = PERIOD_LABELS[code];
  if (known !== undefined) return known;
  const period = parsePeriod(code);
  if (period === null) return code;
  const unit = { D: 'day', W: 'week', M: 'month', Y: 'year' }[period.unit];
  return `Every ${period.count} ${unit}s`;
}
