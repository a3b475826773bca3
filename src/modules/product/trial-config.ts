// A product's free trial in its config (issue 24 item 7; terms in lib/trial.ts). Product types normalise their own
// options and drop what they do not know, so the trial is validated and kept here, for every type, and shown to
// buyers in the public config (the plans page says "7-day free trial" from it).
import { InvalidInput } from '../../lib/invalid-input.ts';
import { normalizeTrial, trialOf } from '../../lib/trial.ts';

/** The plan's meter codes: the built-in `calls` and the codes of `config.meters`. */
function meterCodes(config: Record<string, unknown>): Set<string> {
  const codes = new Set(['calls']);
  if (Array.isArray(config.meters)) {
    for (const meter of config.meters as unknown[]) {
      if (typeof meter === 'object' && meter !== null && typeof (meter as { code?: unknown }).code === 'string') codes.add((meter as { code: string }).code);
    }
  }
  return codes;
}

/** `normalized` with the validated trial (422 naming `config.trial.…`); a trial's `included` must name the plan's meters. */
export function withTrial(normalized: Record<string, unknown>, trial: unknown): Record<string, unknown> {
  const terms = normalizeTrial(trial);
  if (terms === undefined) {
    const rest = { ...normalized };
    delete rest.trial;
    return rest;
  }
  const codes = meterCodes(normalized);
  for (const code of Object.keys(terms.included ?? {})) {
    if (!codes.has(code)) throw new InvalidInput(`config.trial.included.${code}`, 'is not a meter of this plan');
  }
  return { ...normalized, trial: terms };
}

/** The public config with the trial, when the product offers one. */
export function withPublicTrial(publicConfig: Record<string, unknown>, config: Record<string, unknown>): Record<string, unknown> {
  const trial = trialOf(config);
  return trial === null ? publicConfig : { ...publicConfig, trial };
}
