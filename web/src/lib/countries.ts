// The country list (guest/system/countries), fetched once, as select options: the server accepts only these codes.
import { call } from './api.ts';
import { useLoad } from './ui.ts';

let countries: Promise<Record<string, string>> | null = null;

function load(): Promise<Record<string, string>> {
  countries ??= call('guest/system/countries').catch((error: unknown) => {
    countries = null;
    throw error;
  });
  return countries;
}

/** `[['', 'No country'], ['DE', 'Germany'], …]`, sorted by name; undefined until loaded. */
export function useCountryOptions(): Array<[string, string]> | undefined {
  const loaded = useLoad(load, []);
  if (loaded.data === undefined) return undefined;
  return [['', '—'], ...Object.entries(loaded.data).toSorted(([, a], [, b]) => a.localeCompare(b))];
}

/** A country's name for display (`GB` → "United Kingdom"); the code itself until the list is loaded or if unknown. */
export function useCountryName(code: string | null | undefined): string | null | undefined {
  const loaded = useLoad(load, []);
  if (code === null || code === undefined || code === '') return code;
  return loaded.data?.[code] ?? code;
}
