// The pure pieces of the FOSSBilling import: money, dates, periods, JSON and the version check.
import { describe, expect, it } from 'vitest';
import { isoOf, jsonObject, periodOf, rateOf, toMinor } from '../../src/import/fossbilling/convert.ts';
import { refusalFor, versionOfPatch } from '../../src/import/fossbilling/version.ts';

describe('FOSSBilling values', () => {
  it('money becomes integer minor units, exactly, rounding half away from zero', () => {
    expect(toMinor('10.00', 2)).toBe(1000);
    expect(toMinor('49.99', 2)).toBe(4999);
    expect(toMinor(0.33, 2)).toBe(33);
    expect(toMinor(10.1, 2)).toBe(1010);
    expect(toMinor('0.005', 2)).toBe(1);
    expect(toMinor('-2.50', 2)).toBe(-250);
    expect(toMinor('1234', 0)).toBe(1234);
    expect(toMinor('1.2345', 3)).toBe(1235);
    expect(toMinor(null, 2)).toBe(0);
    expect(toMinor('', 2)).toBe(0);
    expect(toMinor('abc', 2)).toBe(0);
    expect(toMinor(1e-7, 2)).toBe(0);
  });

  it('tax rates become thousandths of a percent', () => {
    expect(rateOf('21')).toBe(21000);
    expect(rateOf('7.5')).toBe(7500);
    expect(rateOf(null)).toBe(0);
    expect(rateOf('-3')).toBe(0);
  });

  it('MySQL datetimes become ISO 8601 UTC; zero dates are null', () => {
    expect(isoOf('2024-03-01 12:34:56')).toBe('2024-03-01T12:34:56Z');
    expect(isoOf('2024-03-01')).toBe('2024-03-01T00:00:00Z');
    expect(isoOf('0000-00-00 00:00:00')).toBeNull();
    expect(isoOf(null)).toBeNull();
    expect(isoOf('soon')).toBeNull();
  });

  it('periods keep their codes; unknown ones are null', () => {
    expect(periodOf('1M')).toBe('1M');
    expect(periodOf('3y')).toBe('3Y');
    expect(periodOf('monthly')).toBeNull();
    expect(periodOf(null)).toBeNull();
  });

  it('JSON configs: objects, PHP\'s empty array, and malformed text reported', () => {
    expect(jsonObject('{"a":1}')).toEqual({ value: { a: 1 }, ok: true });
    expect(jsonObject('[]')).toEqual({ value: {}, ok: true });
    expect(jsonObject(null)).toEqual({ value: {}, ok: true });
    expect(jsonObject('{"a":')).toEqual({ value: {}, ok: false });
    expect(jsonObject('[1,2]')).toEqual({ value: {}, ok: false });
    expect(jsonObject('"text"')).toEqual({ value: {}, ok: false });
  });

  it('reads FOSSBilling 0.6.0 to 0.8.5 and refuses the others by name', () => {
    expect(refusalFor('38')).toBeNull();
    expect(refusalFor('43')).toBeNull();
    expect(refusalFor('91')).toBeNull();
    expect(refusalFor('37')).toMatch(/development build \(schema patch 37\) is not supported/);
    expect(refusalFor('34')).toMatch(/FOSSBilling 0\.5\.x or older \(schema patch 34\)/);
    expect(refusalFor('92')).toMatch(/newer than 0\.8\.5 \(schema patch 92\)/);
    expect(refusalFor(null)).toMatch(/not a FOSSBilling 0\.6–0\.8 database/);
    expect(refusalFor('x')).toMatch(/unreadable schema patch level/);
    expect(versionOfPatch(40)).toBe('0.6.x');
    expect(versionOfPatch(43)).toBe('0.7.x');
    expect(versionOfPatch(64)).toBe('0.8.x');
  });
});
