// Every setting, typed, read from the environment once. Each has a default that works on one machine with no
// other service: SQLite under ./data, counters in memory, the scheduler inside the server.

import { availableParallelism } from 'node:os';

export type RateLimitPolicy =
  | 'API_GUEST'
  | 'API_KEY_CHECK'
  | 'API_KEY_CHECK_FAILED'
  | 'API_AUTHENTICATED'
  | 'API_AUTH_FAILED'
  | 'LOGIN'
  | 'SIGNUP'
  | 'CHECKOUT';

export interface RateLimitRule {
  limit: number;
  windowSeconds: number;
}

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  redisUrl: string | null;
  /** Folder for the SQLite file and the generated instance secret. */
  dataDir: string;
  /** Instance secret; null means "read or create `<dataDir>/secret`". */
  secret: string | null;
  bodyLimitBytes: number;
  sessionTtlSeconds: number;
  trustProxy: boolean | string | number;
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  logLevel: string;
  admin: { email: string | null; password: string | null; apiToken: string | null };
  rateLimit: {
    enabled: boolean;
    whitelist: string[];
    policies: Record<RateLimitPolicy, RateLimitRule>;
    /** Prefix of the Redis keys, so several instances (or test runs) can share one Redis. */
    redisPrefix: string;
  };
  currency: string;
  paymentInstructions: string;
  scheduler: boolean;
  invoiceDaysBeforeExpiry: number;
  cancelSuspendedAfterDays: number;
  keyCacheSize: number;
  /** ACCESS_LOG: one line per request through an asynchronous buffered destination. */
  accessLog: boolean;
  /** SLOW_REQUEST_MS: requests slower than this are logged as warnings whatever the level. */
  slowRequestMs: number;
  /** METRICS_TOKEN: Bearer token of GET /metrics; null switches the endpoint off. */
  metricsToken: string | null;
  /** WORKERS: server processes on one port (node:cluster); 'auto' is one per CPU. */
  workers: number;
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
};

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | null {
  const value = env[name];
  return value === undefined || value.trim() === '' ? null : value.trim();
}

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = str(env, name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
  return Number(raw);
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = str(env, name);
  if (raw === null) return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function parseTrustProxy(raw: string | null): boolean | string | number {
  if (raw === null || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  // A hop count ("2") or a list of addresses/CIDRs ("10.0.0.0/8,127.0.0.1"), as Fastify's trustProxy takes them.
  return /^\d+$/.test(raw) ? Number(raw) : raw;
}

function parseRule(name: string, raw: string): RateLimitRule {
  const match = /^(\d+)\s*\/\s*(\d+)$/.exec(raw);
  if (!match || Number(match[2]) === 0) throw new ConfigError(`${name} must look like <limit>/<seconds>, got "${raw}"`);
  return { limit: Number(match[1]), windowSeconds: Number(match[2]) };
}

export function loadConfig(env: Env = process.env): Config {
  const policies = { ...DEFAULT_RATE_LIMITS };
  for (const policy of Object.keys(DEFAULT_RATE_LIMITS) as RateLimitPolicy[]) {
    const raw = str(env, `RATE_LIMIT_${policy}`);
    if (raw !== null) policies[policy] = parseRule(`RATE_LIMIT_${policy}`, raw);
  }
  const currency = (str(env, 'CURRENCY') ?? 'USD').toUpperCase();
  if (!/^[A-Z]{3}$/.test(currency)) throw new ConfigError(`CURRENCY must be a three-letter code, got "${currency}"`);

  return {
    port: int(env, 'PORT', 8080),
    host: str(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: str(env, 'DATABASE_URL') ?? 'sqlite:./data/tollgate.db',
    redisUrl: str(env, 'REDIS_URL'),
    dataDir: str(env, 'DATA_DIR') ?? './data',
    secret: str(env, 'TOLLGATE_SECRET'),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1),
    sessionTtlSeconds: int(env, 'SESSION_TTL_SECONDS', 7200, 1),
    trustProxy: parseTrustProxy(str(env, 'TRUST_PROXY')),
    tlsCertFile: str(env, 'TLS_CERT_FILE'),
    tlsKeyFile: str(env, 'TLS_KEY_FILE'),
    logLevel: str(env, 'LOG_LEVEL') ?? 'info',
    admin: {
      email: str(env, 'TOLLGATE_ADMIN_EMAIL'),
      password: str(env, 'TOLLGATE_ADMIN_PASSWORD'),
      apiToken: str(env, 'TOLLGATE_ADMIN_API_TOKEN'),
    },
    rateLimit: {
      enabled: bool(env, 'RATE_LIMIT_ENABLED', true),
      whitelist: (str(env, 'RATE_LIMIT_WHITELIST') ?? '')
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== ''),
      policies,
      redisPrefix: str(env, 'RATE_LIMIT_REDIS_PREFIX') ?? 'tollgate:rl:',
    },
    currency,
    paymentInstructions:
      str(env, 'PAYMENT_INSTRUCTIONS') ?? 'Pay by bank transfer and quote the invoice number. Staff confirm the payment.',
    scheduler: (str(env, 'SCHEDULER') ?? 'on').toLowerCase() !== 'off',
    invoiceDaysBeforeExpiry: int(env, 'INVOICE_DAYS_BEFORE_EXPIRY', 7),
    cancelSuspendedAfterDays: int(env, 'CANCEL_SUSPENDED_AFTER_DAYS', 30),
    keyCacheSize: int(env, 'KEY_CACHE_SIZE', 100_000, 1),
    accessLog: bool(env, 'ACCESS_LOG', false),
    slowRequestMs: int(env, 'SLOW_REQUEST_MS', 1000, 1),
    metricsToken: str(env, 'METRICS_TOKEN'),
    workers: str(env, 'WORKERS')?.toLowerCase() === 'auto' ? availableParallelism() : int(env, 'WORKERS', 1, 1),
  };
}
