// The key generator and the product options, as pure functions: exact forms, alphabet, case, uniqueness, and the
// validation of every option.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/platform/errors.ts';
import { couldBeKey, generateKey, type KeyOptions } from '../../src/lib/keygen.ts';
import { normalizeApiKeyConfig } from '../../src/modules/serviceapikey/options.ts';
import { createApiKeyProductType } from '../../src/modules/serviceapikey/product-type.ts';

const options = (overrides: Partial<KeyOptions> = {}): KeyOptions => ({ length: 32, split: true, splitInterval: 8, capitalization: 'uppercase', ...overrides });

describe('generateKey', () => {
  it('has the documented default form', () => {
    expect(generateKey(options())).toMatch(/^[0-9A-F]{8}-[0-9A-F]{8}-[0-9A-F]{8}-[0-9A-F]{8}$/);
  });

  it('honours length, split, interval and case exactly', () => {
    for (let length = 8; length <= 128; length++) {
      for (const splitInterval of [1, 3, 5, 8, length]) {
        if (splitInterval > length) continue;
        const key = generateKey(options({ length, splitInterval, capitalization: 'lowercase' }));
        const groups = key.split('-');
        expect(groups.join('')).toHaveLength(length);
        expect(groups.slice(0, -1).every((group) => group.length === splitInterval)).toBe(true);
        expect(groups.at(-1)!.length).toBe(length - splitInterval * (groups.length - 1));
        expect(key).toMatch(/^[0-9a-f-]+$/);
      }
      expect(generateKey(options({ length, split: false }))).toMatch(new RegExp(`^[0-9A-F]{${length}}$`));
    }
    expect(generateKey(options({ length: 12, splitInterval: 5 }))).toMatch(/^[0-9A-F]{5}-[0-9A-F]{5}-[0-9A-F]{2}$/);
  });

  it('mixes case with probability ½ per letter and draws digits uniformly', () => {
    let upper = 0;
    let letters = 0;
    const seen = new Map<string, number>();
    for (let i = 0; i < 400; i++) {
      for (const char of generateKey(options({ length: 128, split: false, capitalization: 'mixed' }))) {
        const lower = char.toLowerCase();
        seen.set(lower, (seen.get(lower) ?? 0) + 1);
        if (/[a-f]/i.test(char)) {
          letters++;
          if (char !== lower) upper++;
        }
      }
    }
    expect(upper / letters).toBeGreaterThan(0.47);
    expect(upper / letters).toBeLessThan(0.53);
    expect(seen.size).toBe(16);
    for (const count of seen.values()) expect(Math.abs(count / (400 * 128) - 1 / 16)).toBeLessThan(0.01);
  });

  it('does not repeat itself', () => {
    const keys = new Set(Array.from({ length: 10_000 }, () => generateKey(options())));
    expect(keys.size).toBe(10_000);
  });

  it('refuses options out of range', () => {
    expect(() => generateKey(options({ length: 7 }))).toThrow(RangeError);
    expect(() => generateKey(options({ length: 129 }))).toThrow(RangeError);
    expect(() => generateKey(options({ splitInterval: 0 }))).toThrow(RangeError);
    expect(() => generateKey(options({ length: 8, splitInterval: 9 }))).toThrow(RangeError);
  });

  it('recognises what could be a key', () => {
    expect(couldBeKey(generateKey(options()))).toBe(true);
    expect(couldBeKey(generateKey(options({ length: 128, splitInterval: 1 })))).toBe(true);
    for (const junk of ['', 'ABC', 'GGGGGGGG', 'AAAA--BBBB', '-AAAAAAAA', 'AAAAAAAA-', "' OR 1=1", 'AAAA\u0000AAAA', 'A'.repeat(256)]) {
      expect(couldBeKey(junk), junk).toBe(false);
    }
  });
});

describe('apikey product options', () => {
  const invalid = (config: Record<string, unknown>): string => {
    try {
      normalizeApiKeyConfig(config);
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).code).toBe(422);
      return (error as ApiError).message;
    }
    throw new Error(`accepted ${JSON.stringify(config)}`);
  };

  it('fills defaults and accepts FOSSBilling spellings', () => {
    expect(normalizeApiKeyConfig({})).toEqual({ length: 32, split: true, split_interval: 8, capitalization: 'uppercase', enforce_limit: false, custom: {}, rate_limit: null, max_keys: 1 });
    expect(normalizeApiKeyConfig({ length: '16', split: '0', case: 'lower', enforce_limit: '1', custom_monthlyLimit: '100', custom_tier: 'pro' })).toEqual({
      length: 16,
      split: false,
      split_interval: 8,
      capitalization: 'lowercase',
      enforce_limit: true,
      custom: { monthlyLimit: 100, tier: 'pro' },
      rate_limit: null,
      max_keys: 1,
    });
    // `case` (only ever sent, never stored) wins over a stored capitalization.
    expect(normalizeApiKeyConfig({ capitalization: 'uppercase', case: 'mixed' }).capitalization).toBe('mixed');
    expect(normalizeApiKeyConfig({ length: 5 + 3, split_interval: '' }).split_interval).toBe(8);
    expect(normalizeApiKeyConfig({ custom: { nested: { a: [1, 2] }, flag: true, monthlyLimit: null } }).custom).toEqual({ nested: { a: [1, 2] }, flag: true, monthlyLimit: null });
  });

  it('names the bad option', () => {
    expect(invalid({ length: 7 })).toContain('config.length');
    expect(invalid({ length: 8.5 })).toContain('config.length');
    expect(invalid({ split_interval: 33 })).toContain('config.split_interval');
    expect(invalid({ split: [] })).toContain('config.split');
    expect(invalid({ capitalization: 'UPPER CASE' })).toContain('config.capitalization');
    expect(invalid({ case: 3 })).toContain('config.case');
    expect(invalid({ enforce_limit: 2 })).toContain('config.enforce_limit');
    expect(invalid({ custom: [1] })).toContain('config.custom');
    expect(invalid({ custom: { 'bad name': 1 } })).toContain('config.custom.bad name');
    expect(invalid({ custom: { monthlyLimit: 1.5 } })).toContain('config.custom.monthlyLimit');
    expect(invalid({ custom: { big: 'x'.repeat(20_000) } })).toContain('config.custom');
  });

  it('shows guests the custom parameters and the usage terms, never the key options', () => {
    const type = createApiKeyProductType({ issue: async () => {}, orderChanged: async () => {}, orderDeleted: async () => {}, serviceFields: async () => ({}) });
    expect(type.code).toBe('apikey');
    // issue 21 item 3: the quota's enforcement, rate limit and key allowance are terms the buyer pays for.
    expect(type.publicConfig({ length: 16, split: true, enforce_limit: true, custom: { tier: 'pro' } })).toEqual({ custom: { tier: 'pro' }, enforce_limit: true });
    expect(type.publicConfig({ length: 16, rate_limit: { limit: 10, window_seconds: 1 }, max_keys: 3, custom: {} })).toEqual({
      custom: {},
      rate_limit: { limit: 10, window_seconds: 1 },
      max_keys: 3,
    });
    expect(type.publicConfig({ length: 16, custom: { tier: 'pro' } })).toEqual({ custom: { tier: 'pro' } });
  });
});
