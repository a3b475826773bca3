// The composition root: builds every service once, handing each its database handle and the narrow parts of its
// neighbours it needs. Actions reach services through `call.services`.
import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import type { DatabaseHandle, DialectName } from './db/database.ts';
import type { Database } from './db/schema.ts';
import { EventBus } from './events.ts';
import { MemoryCounterStore, RedisCounterStore } from './http/counter-store.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { createSecretBox, type SecretBox } from './lib/crypto.ts';
import { moneyFor } from './lib/money.ts';
import { createClientService, type ClientService } from './modules/client/service.ts';
import { createCartService, type CartService } from './modules/cart/service.ts';
import { createCronService, cronStarter, logSchedulerError, type CronService } from './modules/cron/service.ts';
import { customGateway, GatewayRegistry } from './modules/invoice/gateways.ts';
import { createInvoiceService, type InvoiceService } from './modules/invoice/service.ts';
import { createOrderService, type OrderService } from './modules/order/service.ts';
import { customType } from './modules/product/custom-type.ts';
import { createProductService, type ProductService } from './modules/product/service.ts';
import { ProductTypeRegistry } from './modules/product/types-registry.ts';
import { createApiKeyProductType } from './modules/serviceapikey/product-type.ts';
import { createApiKeyService, type ApiKeyService } from './modules/serviceapikey/service.ts';
import { createSessionService, type SessionService } from './modules/session/service.ts';
import { createStaffService, type StaffService } from './modules/staff/service.ts';
import { createOutboxService, type OutboxService } from './modules/outbox/service.ts';
import { createMailService, type MailService } from './modules/email/service.ts';
import { registerNotices } from './modules/email/notices.ts';
import { createWebhookService, type WebhookService } from './modules/webhook/service.ts';

export interface Services {
  config: Config;
  db: Kysely<Database>;
  dialect: DialectName;
  /** The PostgreSQL connection string (for LISTEN/NOTIFY); null on SQLite. */
  postgresUrl: string | null;
  secrets: SecretBox;
  events: EventBus;
  limiter: RateLimiter;
  sessions: SessionService;
  staff: StaffService;
  clients: ClientService;
  /** Every product type that can be sold; modules register theirs here. */
  productTypes: ProductTypeRegistry;
  /** Payment gateways; the built-in `custom` one is manual payment confirmed by staff. */
  gateways: GatewayRegistry;
  products: ProductService;
  orders: OrderService;
  invoices: InvoiceService;
  carts: CartService;
  cron: CronService;
  /** The API key product: keys, the check hot path, usage metering. */
  apikeys: ApiKeyService;
  /** Every side effect that leaves the process (e-mail, later webhooks and charges): one table family, one sender loop. */
  outbox: OutboxService;
  /** E-mail through the outbox: templates, the mail log. */
  mail: MailService;
  /** Webhook endpoints and their deliveries (through the outbox). */
  webhooks: WebhookService;
  /** Started by the server process only (the in-process scheduler…); tests and the CLI never start them. */
  startTasks: Array<() => void>;
  /** Called on shutdown, in reverse order of registration (flush counters, close connections…). */
  onClose(task: () => Promise<void>): void;
  close(): Promise<void>;
}

export function createServices(config: Config, database: DatabaseHandle, instanceSecret: string): Services {
  const { db } = database;
  const secrets = createSecretBox(instanceSecret);
  const events = new EventBus();
  // Closers run in reverse order of registration, so the database (registered first) closes last, after everything
  // that may still write to it on the way out (usage counts, scheduler).
  const closers: Array<() => Promise<void>> = [() => database.close()];

  const counterStore =
    config.redisUrl === null ? new MemoryCounterStore() : new RedisCounterStore(config.redisUrl, config.rateLimit.redisPrefix);
  closers.push(() => counterStore.close());
  const limiter = new RateLimiter(config.rateLimit, counterStore);

  const sessions = createSessionService({ db, secrets, ttlSeconds: config.sessionTtlSeconds });
  const staff = createStaffService({ db, secrets, sessions });
  const clients = createClientService({ db, secrets, events, sessions, defaultCurrency: config.currency });
  const productTypes = new ProductTypeRegistry();
  productTypes.register(customType);
  const apikeys = createApiKeyService({
    db,
    dialect: database.dialect,
    postgresUrl: database.postgresUrl,
    redisUrl: config.redisUrl,
    redisPrefix: config.rateLimit.redisPrefix,
    secrets,
    limiter,
    keyCacheSize: config.keyCacheSize,
    events,
  });
  closers.push(() => apikeys.close());
  productTypes.register(createApiKeyProductType(apikeys));
  const money = moneyFor(config.currency);
  const gateways = new GatewayRegistry();
  gateways.register(customGateway(config.paymentInstructions));
  const products = createProductService({ db, productTypes, money });
  const orders = createOrderService({ db, events, productTypes, products, money });
  const invoices = createInvoiceService({ db, events, orders, gateways, money });
  const carts = createCartService({ db, events, products, orders, invoices, gateways, money });
  const outbox = createOutboxService({
    db,
    dialect: database.dialect,
    pollMs: config.outboxPollMs,
    leaseMs: config.outboxLeaseSeconds * 1000,
  });
  const mail = createMailService({
    db,
    outbox,
    secrets,
    smtpUrl: config.smtpUrl,
    mailFrom: config.mailFrom,
    publicUrl: config.publicUrl,
    smtpTimeoutMs: config.smtpTimeoutMs,
  });
  // The SMTP connection closes after the sender loop has stopped (closers run in reverse).
  closers.push(async () => mail.close());
  closers.push(() => outbox.stop());
  const webhooks = createWebhookService({
    db,
    outbox,
    secrets,
    events,
    allowPrivate: config.webhookAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
  });
  const notices = registerNotices({ db, events, mail, publicUrl: config.publicUrl, money });
  const cron = createCronService({
    db,
    orders,
    invoices,
    carts,
    invoiceDaysBeforeExpiry: config.invoiceDaysBeforeExpiry,
    cancelSuspendedAfterDays: config.cancelSuspendedAfterDays,
    reminders: notices,
    log: logSchedulerError,
  });
  const startTasks: Array<() => void> = [() => outbox.start()];
  if (config.scheduler) startTasks.push(cronStarter(cron, (task) => closers.push(task), logSchedulerError));

  return {
    config,
    db,
    dialect: database.dialect,
    postgresUrl: database.postgresUrl,
    secrets,
    events,
    limiter,
    sessions,
    staff,
    clients,
    productTypes,
    gateways,
    products,
    orders,
    invoices,
    carts,
    cron,
    apikeys,
    outbox,
    mail,
    webhooks,
    startTasks,
    onClose(task) {
      closers.push(task);
    },
    async close() {
      for (const task of closers.toReversed()) await task();
    },
  };
}
