// The second step of login, shared by guest/client/login and guest/staff/login (CONTRACT §10).
import { Type } from '@sinclair/typebox';
import { errors } from '../../platform/errors.ts';
import { failLogin, type LimiterHolder } from '../../platform/login-limits.ts';
import type { HeaderTarget } from '../../platform/rate-limit.ts';
import type { TwoFactorService } from './two-factor.ts';
import type { TwoFactorSubject } from './types.ts';

/** Six digits from the authenticator app, or a recovery code (`xxxxx-xxxxx`); blank counts as no code. */
export const SecondFactorCode = Type.String({ maxLength: 32 });

/**
 * For the login actions, once the password is right: with two-factor login on, a code must come along. Missing →
 * 207; wrong, reused or a spent recovery code → 206, counted like a wrong password and against the account's
 * second-factor ceiling; while that ceiling locks the step → 429 with Retry-After, no code checked (issue 20, M5).
 */
export async function requireSecondFactor(
  services: LimiterHolder & { twoFactor: Pick<TwoFactorService, 'isEnabled' | 'verify'> },
  reply: HeaderTarget,
  ip: string,
  subject: TwoFactorSubject,
  code: string | undefined,
): Promise<void> {
  if (!(await services.twoFactor.isEnabled(subject))) return;
  if (code === undefined || code.trim() === '') throw errors.twoFactorRequired();
  const checked = await services.twoFactor.verify(subject, code);
  if (checked.outcome === 'locked') throw errors.rateLimited(checked.retryAfterSeconds);
  if (checked.outcome === 'wrong') await failLogin(services, reply, ip);
}

