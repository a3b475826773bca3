// Every setting, typed, read from the environment once. Each has a default that works on one machine with no
// other service: SQLite under ./data, counters in memory, the scheduler inside the server.
import { availableParallelism } from 'node:os';
import { DEFAULT_RATE_LIMITS, type RateLimitConfig, type RateLimitPolicy, type RateLimitRule } from './platform/rate-limit.ts';
import { settingDefaultsFromEnv, type SettingName } from './platform/settings-catalogue.ts';

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
  rateLimit: RateLimitConfig;
  currency: string;
  paymentInstructions: string;
  scheduler: boolean;
  invoiceDaysBeforeExpiry: number;
  cancelSuspendedAfterDays: number;
  keyCacheSize: number;
  /** Slow clients (issue 8): the whole request must arrive within this, its headers within `headersTimeoutMs`. */
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveTimeoutMs: number;
  /** Open connections one address may hold (0 = no cap); RATE_LIMIT_WHITELIST addresses are exempt. */
  maxConnectionsPerIp: number;
  /**
   * MAX_CONNECTIONS: open connections the process holds at most (issue 20, M6); 0 = no cap. Null (unset): derived at
   * start from the process's descriptor limit (src/http/descriptor-limit.ts), leaving room for everything else.
   */
  maxConnections: number | null;
  /** Where and how the Stripe library connects; the keys come from the stripe_* settings (env or database). */
  stripe: StripeConnection;
  /** Where customers reach Tollgate (links in mails, return URLs); no trailing slash. */
  publicUrl: string;
  /** E-mail (CONTRACT §10): SMTP through nodemailer when set; without it mails stay `not_sent` and are logged. */
  smtpUrl: string | null;
  mailFrom: string;
  /** Connection, greeting and socket timeout of each SMTP conversation. */
  smtpTimeoutMs: number;
  /** The outbox sender: how often it looks for due items, and how long a claim holds (a crashed sender's items wait this long). */
  outboxPollMs: number;
  outboxLeaseSeconds: number;
  /** Defaults of the settings staff edit (CONTRACT §8), from each setting's upper-cased name in the environment. */
  settings: Partial<Record<SettingName, string>>;
  /** ACCESS_LOG: one line per request through an asynchronous buffered destination. */
  accessLog: boolean;
  /** DIRECT_ANSWERS: the key check's plain JSON POSTs answered before Fastify (src/http/direct.ts); false sends them through the gateway. */
  directAnswers: boolean;
  /** SLOW_REQUEST_MS: requests slower than this are logged as warnings whatever the level. */
  slowRequestMs: number;
  /** METRICS_TOKEN: Bearer token of GET /metrics; null switches the endpoint off. */
  metricsToken: string | null;
  /** WORKERS: server processes on one port (node:cluster); 'auto' is one per CPU. */
  workers: number;
  /** The verifiers' events stream (issue 11): a comment line this often keeps idle proxies from closing it. */
  eventsKeepAliveMs: number;
  /** Webhooks (CONTRACT §11): allow private, loopback and link-local receivers (tests, an operator's own network). */
  webhookAllowPrivate: boolean;
  /** How long one webhook delivery may take, connection to last byte. */
  webhookTimeoutMs: number;
  /** How long a VIES check may take before it counts as VIES being down and is retried through the outbox (issue 26). */
  viesTimeoutMs: number;
}

export interface StripeConnection {
  /** The API's base URL; tests point it at a local server speaking Stripe's API. */
  apiBase: { protocol: 'http' | 'https'; host: string; port: number };
  /** The library's request timeout: a slow Stripe counts as a failed attempt, not a hung renewal. */
  timeoutMs: number;
}

export interface StripeConfig extends StripeConnection {
  secretKey: string;
  webhookSecret: string;
}

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

/**
 * A number is a hop count (docs/configuration.md): `1` trusts only the nearest proxy, so the caller is the right-most
 * X-Forwarded-For entry and whatever a client wrote to the left of it is ignored. Reading `1` as `true` (trust every
 * hop) would let any client choose its own address and dodge every per-IP limit. `0` trusts nothing; `true` trusts
 * every hop; anything else is a list of addresses/CIDRs ("10.0.0.0/8,127.0.0.1").
 */
function parseTrustProxy(raw: string | null): boolean | string | number {
  if (raw === null) return false;
  if (/^\d+$/.test(raw)) return Number(raw) === 0 ? false : Number(raw);
  if (/^(false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  return raw;
}

function parseRule(name: string, raw: string): RateLimitRule {
  const match = /^(\d+)\s*\/\s*(\d+)$/.exec(raw);
  if (!match || Number(match[2]) === 0) throw new ConfigError(`${name} must look like <limit>/<seconds>, got "${raw}"`);
  return { limit: Number(match[1]), windowSeconds: Number(match[2]) };
}

function timeouts(env: Env): Pick<Config, 'requestTimeoutMs' | 'headersTimeoutMs' | 'keepAliveTimeoutMs'> {
  const requestTimeoutMs = int(env, 'REQUEST_TIMEOUT_MS', 30_000, 1);
  const headersTimeoutMs = int(env, 'HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 1);
  // Node refuses a headers timeout longer than the request timeout (the headers are part of the request).
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError('HEADERS_TIMEOUT_MS must not be larger than REQUEST_TIMEOUT_MS');
  return { requestTimeoutMs, headersTimeoutMs, keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 10_000, 1) };
}

function ipv6PrefixLength(env: Env): number {
  const bits = int(env, 'IPV6_PREFIX_LENGTH', 64, 1);
  if (bits > 128) throw new ConfigError(`IPV6_PREFIX_LENGTH must be between 1 and 128, got "${bits}"`);
  return bits;
}

function parseStripe(env: Env): StripeConnection {
  const raw = str(env, 'STRIPE_API_BASE') ?? 'https://api.stripe.com';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`STRIPE_API_BASE must be a URL such as https://api.stripe.com, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`STRIPE_API_BASE must be http(s), got "${raw}"`);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  const port = url.port === '' ? (protocol === 'http' ? 80 : 443) : Number(url.port);
  return { apiBase: { protocol, host: url.hostname, port }, timeoutMs: int(env, 'STRIPE_TIMEOUT_MS', 20_000, 1) };
}

function settingDefaults(env: Env): Partial<Record<SettingName, string>> {
  try {
    return settingDefaultsFromEnv(env);
  } catch (error) {
    throw new ConfigError(`Environment: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export function loadConfig(env: Env = process.env): Config {
  const policies = { ...DEFAULT_RATE_LIMITS };
  for (const policy of Object.keys(DEFAULT_RATE_LIMITS) as RateLimitPolicy[]) {
    const raw = str(env, `RATE_LIMIT_${policy}`);
    if (raw !== null) policies[policy] = parseRule(`RATE_LIMIT_${policy}`, raw);
  }
  const port = int(env, 'PORT', 8080);
  const publicUrl = parsePublicUrl(str(env, 'PUBLIC_URL'), port);
  const smtpUrl = parseSmtpUrl(str(env, 'SMTP_URL'));
  const mailFrom = parseMailFrom(str(env, 'MAIL_FROM'), publicUrl);
  const currency = (str(env, 'CURRENCY') ?? 'USD').toUpperCase();
  if (!/^[A-Z]{3}$/.test(currency)) throw new ConfigError(`CURRENCY must be a three-letter code, got "${currency}"`);

  return {
    port,
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
      ipv6PrefixLength: ipv6PrefixLength(env),
    },
    currency,
    paymentInstructions:
      str(env, 'PAYMENT_INSTRUCTIONS') ?? 'Pay by bank transfer and quote the reference given with the invoice. Staff confirm the payment.',
    scheduler: (str(env, 'SCHEDULER') ?? 'on').toLowerCase() !== 'off',
    invoiceDaysBeforeExpiry: int(env, 'INVOICE_DAYS_BEFORE_EXPIRY', 7),
    cancelSuspendedAfterDays: int(env, 'CANCEL_SUSPENDED_AFTER_DAYS', 30),
    keyCacheSize: int(env, 'KEY_CACHE_SIZE', 100_000, 1),
    ...timeouts(env),
    // Behind a proxy every connection comes from the proxy's address, so there is no default cap then.
    maxConnectionsPerIp: int(env, 'MAX_CONNECTIONS_PER_IP', parseTrustProxy(str(env, 'TRUST_PROXY')) === false ? 128 : 0),
    maxConnections: str(env, 'MAX_CONNECTIONS') === null ? null : int(env, 'MAX_CONNECTIONS', 0),
    publicUrl,
    smtpUrl,
    mailFrom,
    smtpTimeoutMs: int(env, 'SMTP_TIMEOUT_MS', 30_000, 100),
    outboxPollMs: int(env, 'OUTBOX_POLL_MS', 5000, 10),
    outboxLeaseSeconds: int(env, 'OUTBOX_LEASE_SECONDS', 300, 1),
    stripe: parseStripe(env),
    settings: settingDefaults(env),
    accessLog: bool(env, 'ACCESS_LOG', false),
    directAnswers: bool(env, 'DIRECT_ANSWERS', true),
    slowRequestMs: int(env, 'SLOW_REQUEST_MS', 1000, 1),
    metricsToken: str(env, 'METRICS_TOKEN'),
    workers: str(env, 'WORKERS')?.toLowerCase() === 'auto' ? availableParallelism() : int(env, 'WORKERS', 1, 1),
    eventsKeepAliveMs: int(env, 'EVENTS_KEEPALIVE_MS', 15_000, 10),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 10),
    viesTimeoutMs: int(env, 'VIES_TIMEOUT_MS', 10_000, 10),
  };
}

function parsePublicUrl(raw: string | null, port: number): string {
  const text = raw ?? `http://localhost:${port}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an http(s) URL, got "${text}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`PUBLIC_URL must be an http(s) URL, got "${text}"`);
  return text.replace(/\/+$/, '');
}

function parseSmtpUrl(raw: string | null): string | null {
  if (raw === null) return null;
  if (!/^smtps?:\/\/[^\s]+$/.test(raw)) throw new ConfigError('SMTP_URL must look like smtp://user:pass@host:587 or smtps://…');
  return raw;
}

function parseMailFrom(raw: string | null, publicUrl: string): string {
  // oxlint-disable-next-line no-control-regex -- a sender with a line break would start a header of its own
  if (raw !== null && /[\u0000-\u001f\u007f]/.test(raw)) throw new ConfigError('MAIL_FROM must be one line');
  // No display name by default: mails go out under the company name once it is set (email/layout.ts).
  return raw ?? `noreply@${new URL(publicUrl).hostname}`;
}
