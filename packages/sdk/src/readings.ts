// What the middleware's `meters` option returns: the meters to track for one request, read from the request and its
// response (response bytes, tokens from a header, the model asked for…).

/** One event to track: `value` for sum, max and latest meters (a whole number ≥ 0), none for count meters. */
export interface MeterReading {
  meter: string;
  value?: number;
  properties?: Record<string, unknown>;
}

/** Zero or more readings: one, a list, or nothing (null, undefined, an empty list). */
export type MeterReadings = MeterReading | readonly MeterReading[] | null | undefined;

/** The readings as a list of unchecked values (each is checked when tracked). */
export function readingList(readings: MeterReadings): readonly unknown[] {
  const value: unknown = readings;
  if (value === null || value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}
