// Words for people instead of codes: billing periods (`1M` → "Every month", from guest/system/periods, fetched
// once) and product types (`apikey` → "API key").
// Used until the server's labels arrive, and for codes it does not list: the server's own table.
import { PERIOD_LABELS } from '../../../src/lib/periods.ts';
import { call } from './api.ts';
import { useLoad } from './ui.ts';

let periodLabels: Promise<Record<string, string>> | null = null;

/** guest/system/periods, fetched once per page load (retried after a failure). */
export function periods(): Promise<Record<string, string>> {
  periodLabels ??= call('guest/system/periods').catch((error: unknown) => {
    periodLabels = null;
    throw error;
  });
  return periodLabels;
}

/** `1M` → "Every month"; no period → "One time"; an unknown code reads "Every 5 months" when it can be spelled out. */
export function periodLabel(labels: Record<string, string> | undefined, code: string | null | undefined): string {
  if (code === null || code === undefined || code === '') return 'One time';
  const known = labels?.[code] ?? PERIOD_LABELS[code];
  if (known !== undefined) return known;
  const match = /^(\d+)([DWMY])$/.exec(code);
  if (match === null) return code;
  const unit = { D: 'day', W: 'week', M: 'month', Y: 'year' }[match[2] as 'D' | 'W' | 'M' | 'Y'];
  return match[1] === '1' ? `Every ${unit}` : `Every ${match[1]} ${unit}s`;
}

/** The period labels for a component (undefined while loading; periodLabel falls back meanwhile). */
export function usePeriodLabels(): Record<string, string> | undefined {
  return useLoad(periods, []).data;
}

const TYPE_LABELS: Record<string, string> = { apikey: 'API key', custom: 'Custom' };

export function typeLabel(type: string | null | undefined): string {
  if (type === null || type === undefined) return '—';
  return TYPE_LABELS[type] ?? type;
}
