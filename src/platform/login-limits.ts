// The rate limits around credentials (CONTRACT §4): a failed login or a wrong API token counts against
// API_AUTH_FAILED per address, and each login attempt counts under LOGIN per (address, e-mail). Used by the gateway's
// authentication (src/http/auth.ts) and by the login actions of the client and staff modules, so both count alike.
import { errors, type ApiError } from './errors.ts';
import { enforce, type HeaderTarget, type RateLimiter } from './rate-limit.ts';

/** What these checks need of the services: the rate limiter. */
export interface LimiterHolder {
  limiter: RateLimiter;
}

/** Throws `failure`, or 429 once this IP has failed too often; either way the failure is counted. */
export async function rejectAttempt({ limiter }: LimiterHolder, reply: HeaderTarget, ip: string, failure: ApiError): Promise<never> {
  if (!limiter.isExempt(ip)) {
    const decision = await limiter.hit('API_AUTH_FAILED', ip);
    if (!decision.allowed) enforce(reply, decision);
  }
  throw failure;
}

/** The LOGIN subject: one e-mail address tried from one network address (an IPv6 caller's whole prefix). */
function loginSubject(limiter: RateLimiter, ip: string, email: string): string {
  return `${limiter.addressKey(ip)}|${email.trim().toLowerCase()}`;
}

/**
 * For login actions, before any password is checked: counts the attempt under LOGIN per (address, e-mail), so
 * guessing one account's password stops after a few tries without shutting out the other people behind the same
 * address; and refuses when the address has failed too often overall (API_AUTH_FAILED, the looser per-address
 * ceiling that stops spraying many e-mails).
 */
export async function guardLogin({ limiter }: LimiterHolder, reply: HeaderTarget, ip: string, email: string): Promise<void> {
  if (limiter.isExempt(ip)) return;
  const blocked = await limiter.isBlocked('API_AUTH_FAILED', ip);
  if (blocked !== null) enforce(reply, blocked);
  enforce(reply, await limiter.hit('LOGIN', loginSubject(limiter, ip, email)));
}

/** For login actions: counts a failed login against API_AUTH_FAILED and throws 206 (or 429 once over the limit). */
export function failLogin(services: LimiterHolder, reply: HeaderTarget, ip: string): Promise<never> {
  return rejectAttempt(services, reply, ip, errors.loginFailed());
}
