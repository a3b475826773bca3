// The free-trial terms (src/lib/trial.ts): validation naming the field, the trial's included units replacing the
// plan's (built-in `calls` and the plan's meters by code), and the wording.
import { describe, expect, it } from 'vitest';
import { InvalidInput } from '../../src/lib/invalid-input.ts';
import { normalizeTrial, trialConfig, trialOf, trialText } from '../../src/lib/trial.ts';

describe('free-trial terms', () => {
  it('accepts days 1–365, a card flag and whole included units', () => {
    expect(normalizeTrial(undefined)).toBeUndefined();
    expect(normalizeTrial(null)).toBeUndefined();
    expect(normalizeTrial({ days: 1, requires_card: true })).toEqual({ days: 1, requires_card: true });
    expect(normalizeTrial({ days: 365, requires_card: false, included: { calls: 0, tokens: 50_000 } })).toEqual({ days: 365, requires_card: false, included: { calls: 0, tokens: 50_000 } });
  });

  it('refuses bad terms, naming the field', () => {
    const param = (value: unknown): string => {
      try {
        normalizeTrial(value);
      } catch (error) {
        if (error instanceof InvalidInput) return error.param;
      }
      return 'accepted';
    };
    expect(param([])).toBe('config.trial');
    expect(param({ days: '7', requires_card: false })).toBe('config.trial.days');
    expect(param({ days: -1, requires_card: false })).toBe('config.trial.days');
    expect(param({ days: 7, requires_card: 1 })).toBe('config.trial.requires_card');
    expect(param({ days: 7, requires_card: false, included: [] })).toBe('config.trial.included');
    expect(param({ days: 7, requires_card: false, included: { 'Bad code': 1 } })).toBe('config.trial.included.Bad code');
    expect(param({ days: 7, requires_card: false, included: { calls: 1.5 } })).toBe('config.trial.included.calls');
    expect(param({ days: 7, requires_card: false, included: { calls: 2 ** 60 } })).toBe('config.trial.included.calls');
  });

  it('a stored config the rules now refuse has no trial', () => {
    expect(trialOf({ trial: { days: 0, requires_card: false } })).toBeNull();
    expect(trialOf({})).toBeNull();
  });

  it('replaces the included units of calls and of the meters named, leaving the rest', () => {
    const plan = { included: 1000, custom: { tier: 'pro' }, meters: [{ code: 'tokens', included: 1_000_000 }, { code: 'bytes', included: 5 }] };
    const during = trialConfig(plan, { days: 7, requires_card: false, included: { calls: 50, tokens: 50_000 } });
    expect(during).toEqual({ included: 50, custom: { tier: 'pro' }, meters: [{ code: 'tokens', included: 50_000 }, { code: 'bytes', included: 5 }] });
    expect(plan.included).toBe(1000);
    expect(trialConfig(plan, { days: 7, requires_card: false })).toBe(plan);
  });

  it('words the trial for the plans page', () => {
    expect(trialText({ days: 7, requires_card: false })).toBe('7-day free trial, no card needed');
    expect(trialText({ days: 14, requires_card: true })).toBe('14-day free trial, card required');
  });
});
