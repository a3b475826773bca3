// Rate-limit policies of CONTRACT §4 over a CounterStore: a decision per (policy, subject), the whitelist, and the
// RateLimit-* / Retry-After headers.
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { AddressGroups } from './address-groups.ts';
import type { CounterStore, Hit } from './counters/store.ts';
import { errors } from './errors.ts';

export type RateLimitPolicy =
  | 'API_GUEST'
  | 'API_KEY_CHECK'
  | 'API_KEY_CHECK_FAILED'
  | 'API_AUTHENTICATED'
  | 'API_AUTH_FAILED'
  | 'LOGIN'
  | 'SIGNUP'
  | 'CHECKOUT'
  | 'PASSWORD_RESET'
  | 'PAYMENT'
  | 'API_KEY_CHECK_VERIFIER';

export interface RateLimitRule {
  limit: number;
  windowSeconds: number;
}

/** The limiter's settings (RATE_LIMIT_* in the environment, read by src/config.ts). */
export interface RateLimitConfig {
  enabled: boolean;
  whitelist: string[];
  policies: Record<RateLimitPolicy, RateLimitRule>;
  /** Prefix of the Redis keys, so several instances (or test runs) can share one Redis. */
  redisPrefix: string;
  /**
   * IPV6_PREFIX_LENGTH: IPv6 callers are limited per prefix of this many bits (a customer's whole /64), in the rate
   * limits and the per-address connection cap; 128 counts every address alone (issue 20, M7).
   */
  ipv6PrefixLength: number;
}

export const DEFAULT_RATE_LIMITS: Readonly<Record<RateLimitPolicy, RateLimitRule>> = {
  API_GUEST: { limit: 600, windowSeconds: 60 },
  API_KEY_CHECK: { limit: 100_000, windowSeconds: 60 },
  API_KEY_CHECK_FAILED: { limit: 60, windowSeconds: 60 },
  API_AUTHENTICATED: { limit: 3000, windowSeconds: 3600 },
  API_AUTH_FAILED: { limit: 20, windowSeconds: 300 },
  LOGIN: { limit: 10, windowSeconds: 3600 },
  SIGNUP: { limit: 5, windowSeconds: 3600 },
  CHECKOUT: { limit: 15, windowSeconds: 3600 },
  PASSWORD_RESET: { limit: 5, windowSeconds: 3600 },
  PAYMENT: { limit: 30, windowSeconds: 3600 },
  API_KEY_CHECK_VERIFIER: { limit: 1_000_000, windowSeconds: 60 },
};

export interface Decision {
  policy: RateLimitPolicy;
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

export function normaliseIp(ip: string): string {
  return ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
}

/** The addresses and CIDRs of RATE_LIMIT_WHITELIST as a BlockList (also used by the connection cap). */
export function buildWhitelist(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
    if (family === null) throw new Error(`RATE_LIMIT_WHITELIST: "${entry}" is not an IP address or CIDR`);
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return list;
}

/** The key check's policies: counted in process and shared in batches (src/platform/counters/batched.ts) when a hot store is given. */
export const HOT_POLICIES: ReadonlySet<RateLimitPolicy> = new Set<RateLimitPolicy>(['API_KEY_CHECK', 'API_KEY_CHECK_FAILED']);

export class RateLimiter {
  /** IPv6 subjects count per IPV6_PREFIX_LENGTH prefix, IPv4-mapped ones as their IPv4 (issue 20, M7). */
  readonly groups: AddressGroups;
  private readonly whitelist: BlockList;
  private readonly exemptions = new Map<string, boolean>();
  /** The store each policy counts in: `hotStore` for HOT_POLICIES, `store` (exact) for the others. */
  private readonly stores: Record<string, CounterStore> = {};

  constructor(
    private readonly config: RateLimitConfig,
    readonly store: CounterStore,
    readonly hotStore: CounterStore = store,
  ) {
    this.whitelist = buildWhitelist(config.whitelist);
    this.groups = new AddressGroups(config.ipv6PrefixLength);
    for (const policy of Object.keys(config.policies)) this.stores[policy] = HOT_POLICIES.has(policy as RateLimitPolicy) ? hotStore : store;
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  isExempt(ip: string): boolean {
    if (!this.config.enabled) return true;
    // The common case on the hot path: no whitelist, nothing to parse.
    if (this.config.whitelist.length === 0) return false;
    let exempt = this.exemptions.get(ip);
    if (exempt === undefined) {
      const address = normaliseIp(ip);
      exempt = this.whitelist.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
      // A whitelisted application server calls from a handful of addresses: remember the answer, within bounds.
      if (this.exemptions.size >= 10_000) this.exemptions.clear();
      this.exemptions.set(ip, exempt);
    }
    return exempt;
  }

  private decide(policy: RateLimitPolicy, hit: Hit | null): Decision {
    const { limit } = this.config.policies[policy];
    const count = hit?.count ?? 0;
    return {
      policy,
      allowed: count <= limit,
      limit,
      remaining: Math.max(0, limit - count),
      resetSeconds: Math.max(1, Math.ceil((hit?.resetMs ?? this.config.policies[policy].windowSeconds * 1000) / 1000)),
    };
  }

  /**
   * The key `address` is counted under, for a subject made of an address and more (a login's address and e-mail).
   * `hit` and `isBlocked` apply it themselves to a subject that is an address.
   */
  addressKey(address: string): string {
    return this.groups.keyOf(address);
  }

  /**
   * Counts one request of `subject` under `policy`. Synchronous with the memory store. A subject that is an IP
   * address is counted for its group (addressKey): every per-address limit groups alike, wherever its caller sits,
   * while the whitelist (isExempt) still looks at the single address.
   */
  hit(policy: RateLimitPolicy, subject: string): Decision | Promise<Decision> {
    const key = `${policy}:${this.groups.keyOf(subject)}`;
    const result = this.stores[policy]!.incr(key, this.config.policies[policy].windowSeconds * 1000);
    return result instanceof Promise ? result.then((hit) => this.decide(policy, hit)) : this.decide(policy, result);
  }

  /** Whether `subject` is already over the limit of `policy`, without counting anything. */
  async isBlocked(policy: RateLimitPolicy, subject: string): Promise<Decision | null> {
    const hit = await this.stores[policy]!.get(`${policy}:${this.groups.keyOf(subject)}`);
    if (hit === null) return null;
    const decision = this.decide(policy, hit);
    return hit.count >= decision.limit ? { ...decision, allowed: false } : null;
  }
}

/** Where a decision's headers go: a Fastify reply, or the header set of a direct answer (src/http/direct.ts). */
export interface HeaderTarget {
  header(name: string, value: string | number): unknown;
}

export function applyHeaders(reply: HeaderTarget, decision: Decision): void {
  reply.header('RateLimit-Limit', decision.limit);
  reply.header('RateLimit-Remaining', decision.remaining);
  reply.header('RateLimit-Reset', decision.resetSeconds);
}

/** Sets the headers and throws 429 when the decision says no. */
export function enforce(reply: HeaderTarget, decision: Decision): void {
  applyHeaders(reply, decision);
  if (!decision.allowed) throw errors.rateLimited(decision.resetSeconds);
}
