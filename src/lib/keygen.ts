// API key generation (CONTRACT §7): hexadecimal characters from a CSPRNG, an exact number of them, optionally grouped
// with dashes, in upper, lower or mixed case. Pure: no I/O, no knowledge of the database.
import { randomBytes } from 'node:crypto';

export type Capitalization = 'uppercase' | 'lowercase' | 'mixed';

export interface KeyOptions {
  /** Characters of key material, dashes not counted (8–128). */
  length: number;
  split: boolean;
  /** Characters per group when `split` (1–length); the last group may be shorter. */
  splitInterval: number;
  capitalization: Capitalization;
}

export const KEY_LENGTH_MIN = 8;
export const KEY_LENGTH_MAX = 128;
/** The longest key any option set can produce: 128 characters split every 1, so 127 dashes. */
export const KEY_MAX_CHARS = KEY_LENGTH_MAX * 2 - 1;

export const DEFAULT_KEY_OPTIONS: Readonly<KeyOptions> = { length: 32, split: true, splitInterval: 8, capitalization: 'uppercase' };

const HEX = '0123456789abcdef';

/** Generates one key. Throws on options outside the documented ranges (callers validate first). */
export function generateKey(options: KeyOptions): string {
  const { length, split, splitInterval, capitalization } = options;
  if (!Number.isInteger(length) || length < KEY_LENGTH_MIN || length > KEY_LENGTH_MAX) throw new RangeError('length out of range');
  if (split && (!Number.isInteger(splitInterval) || splitInterval < 1 || splitInterval > length)) {
    throw new RangeError('splitInterval out of range');
  }
  // One random byte per character: its low nibble is the hex digit, its high bit decides the case in `mixed`. Both
  // are uniform and independent, so every digit is uniform over 16 values and each letter is upper-case with p = ½.
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) {
    if (split && i > 0 && i % splitInterval === 0) out += '-';
    const byte = bytes[i]!;
    const digit = HEX[byte & 0x0f]!;
    const upper = capitalization === 'uppercase' || (capitalization === 'mixed' && (byte & 0x80) !== 0);
    out += upper ? digit.toUpperCase() : digit;
  }
  return out;
}

/**
 * A cheap test that a string could be a key some option set produced: hex digits in groups separated by single
 * dashes, at most KEY_MAX_CHARS long. Anything else is answered "unknown" without touching a cache or the database.
 */
export function couldBeKey(value: string): boolean {
  return value.length >= KEY_LENGTH_MIN && value.length <= KEY_MAX_CHARS && /^[0-9A-Fa-f]+(?:-[0-9A-Fa-f]+)*$/.test(value);
}
