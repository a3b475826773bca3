// Pure conversions from FOSSBilling's column values to Tollgate's: money to integer minor units, MySQL datetimes to
// ISO 8601 UTC, billing periods to period codes, statuses, and JSON that may be malformed.

/**
 * A decimal amount (DECIMAL columns arrive as strings, DOUBLE ones as numbers) in minor units, rounded half away
 * from zero at `precision` as PHP's round() does. Never through floating-point arithmetic: the text is cut.
 */
export function toMinor(value: string | number | null | undefined, precision: number): number {
  if (value === null || value === undefined || value === '') return 0;
  // String(10.1) is "10.1": the shortest text that reads back as the same double, i.e. what FOSSBilling stored.
  const text = (typeof value === 'number' ? (Number.isFinite(value) ? numberText(value) : '0') : value).trim();
  const match = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (match === null || (match[2] === '' && (match[3] ?? '') === '')) return 0;
  const sign = match[1] === '-' ? -1 : 1;
  const fraction = (match[3] ?? '').padEnd(precision + 1, '0');
  const kept = Number((match[2] || '0') + fraction.slice(0, precision));
  const roundUp = Number(fraction[precision]) >= 5 ? 1 : 0;
  const minor = kept + roundUp;
  return minor === 0 ? 0 : sign * minor;
}

/** A number as plain decimal text (no exponent), for amounts like 1e-7 that String() would write as "1e-7". */
function numberText(value: number): string {
  const text = String(value);
  return /e/i.test(text) ? value.toFixed(20) : text;
}

/** A tax rate in percent ("21", "7.5") as thousandths of a percent (21000, 7500), Tollgate's unit. */
export function rateOf(value: string | number | null | undefined): number {
  return Math.max(0, toMinor(value, 3));
}

/**
 * A MySQL DATETIME ("2024-03-01 12:00:00", read as text) as ISO 8601 in UTC. FOSSBilling writes PHP's date() in the
 * server's time zone, which installs keep at UTC; the import reads them as UTC (documented). Zero dates are null.
 */
export function isoOf(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2}))?/.exec(value.trim());
  if (match === null || match[1] === '0000' || match[2] === '00' || match[3] === '00') return null;
  return `${match[1]}-${match[2]}-${match[3]}T${match[4] ?? '00'}:${match[5] ?? '00'}:${match[6] ?? '00'}Z`;
}

/**
 * FOSSBilling's periods: `1W`, `1M`, `3M`, `6M`, `1Y`, `2Y`, `3Y` on orders and invoice lines (the same codes as
 * Tollgate's), and the product_payment column prefixes w, m, q, b, a, bia, tria.
 */
export const PERIOD_COLUMNS: ReadonlyArray<readonly [prefix: string, code: string]> = [
  ['w', '1W'],
  ['m', '1M'],
  ['q', '3M'],
  ['b', '6M'],
  ['a', '1Y'],
  ['bia', '2Y'],
  ['tria', '3Y'],
];

const PERIOD_CODE = /^([1-9]\d?)([DWMY])$/;

/** An order's or line's period as a Tollgate period code, or null when it has none or an unknown one. */
export function periodOf(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const code = value.trim().toUpperCase();
  return PERIOD_CODE.test(code) ? code : null;
}

/** JSON text read leniently: null, empty, malformed or not an object → `fallback`, and `ok: false` when malformed. */
export function jsonObject(text: string | null | undefined): { value: Record<string, unknown>; ok: boolean } {
  if (text === null || text === undefined || text.trim() === '' || text.trim() === 'null') return { value: {}, ok: true };
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return { value: parsed as Record<string, unknown>, ok: true };
    // PHP's json_encode of an empty array is "[]": FOSSBilling writes that for an empty config.
    if (Array.isArray(parsed) && parsed.length === 0) return { value: {}, ok: true };
    return { value: {}, ok: false };
  } catch {
    return { value: {}, ok: false };
  }
}

/** Trimmed text, or null when blank. */
export function textOf(value: string | number | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const text = String(value).trim();
  return text === '' ? null : text;
}

/** An ISO 3166-1 alpha-2 code, upper-cased, or null (Tollgate refuses other country values). */
export function countryOf(value: string | null | undefined): string | null {
  const text = textOf(value)?.toUpperCase() ?? null;
  return text !== null && /^[A-Z]{2}$/.test(text) ? text : null;
}
