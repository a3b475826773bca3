// Everything a process needs before it can serve or run a command: configuration, instance secret, database at the
// latest migration, services. Shared by the server, the CLI, the tests and the benchmarks.
import { loadConfig, type Config } from './config.ts';
import { openDatabase, type DatabaseHandle } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { resolveInstanceSecret } from './platform/instance-secret.ts';
import { createServices, type Services } from './services.ts';
import { randomString } from './lib/crypto.ts';
import { storedDefaultCode } from './modules/currency/service.ts';
import { ADMINISTRATORS_GROUP_ID } from './modules/staff/service.ts';

/** `opened`: a database already open to use instead of config.databaseUrl (the tests hand in a copy of a template). */
export async function bootstrap(config: Config = loadConfig(), opened?: DatabaseHandle): Promise<Services> {
  const secret = resolveInstanceSecret(config.secret, config.dataDir);
  const database = opened ?? openDatabase(config.databaseUrl);
  try {
    await migrateToLatest(database.db);
  } catch (error) {
    await database.close();
    throw error;
  }
  // Amounts are formatted in the database's default currency: CURRENCY names only the first one, and staff may have
  // chosen another since with admin/currency/set_default (docs/currencies.md, "The default currency").
  const stored = await storedDefaultCode(database.db);
  const effective = stored === undefined || stored === config.currency ? config : { ...config, currency: stored };
  const services = createServices(effective, database, secret);
  // The first start after migration 038 makes CURRENCY the default currency, so the instance keeps its money as it was;
  // here rather than in the migration, which does not read the configuration.
  await services.currencies.seedDefault(effective.currency);
  // Stored settings are in the in-process copy from the first request: the Stripe gateway and the mail transport
  // read their secrets from it at each use (src/modules/payment/stripe/switch.ts).
  await services.settings.preload();
  // Serve with shared rate-limit counters from the first request when Redis is there; without it, go on after 2 s.
  await Promise.all([services.limiter.store.ready?.(2000), services.limiter.hotStore.ready?.(2000)]);
  return services;
}

export interface FirstAdmin {
  email: string;
  /** Present only when generated here, so it can be printed once. */
  password: string | null;
  apiToken: string;
}

/**
 * When no staff exists, creates the first administrator from TOLLGATE_ADMIN_* or, when those are unset, with a
 * generated e-mail, password and token that the caller prints once. Returns null when staff already exists.
 */
export async function ensureFirstAdmin(services: Services): Promise<FirstAdmin | null> {
  if ((await services.staff.count()) > 0) return null;
  const { email, password, apiToken } = services.config.admin;
  const generatedPassword = password === null ? `${randomString(20)}aA1` : null;
  const created = await services.staff.create({
    email: email ?? 'admin@tollgate.local',
    password: password ?? generatedPassword!,
    name: 'Administrator',
    admin_group_id: ADMINISTRATORS_GROUP_ID,
    apiToken: apiToken ?? undefined,
  });
  return { email: email ?? 'admin@tollgate.local', password: generatedPassword, apiToken: created.apiToken };
}
