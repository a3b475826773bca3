// The composition root: builds every service once, handing each its database handle and the narrow parts of its
// neighbours it needs. Actions reach services through `call.services`.
import cluster from 'node:cluster';
import type { Kysely } from 'kysely';
import { ClusterCounterBackend, ClusterCounterStore } from './platform/counters/cluster.ts';
import type { Config } from './config.ts';
import type { ModuleServices } from './modules/index.ts';
import type { DatabaseHandle, DialectName } from './db/database.ts';
import type { Database } from './db/schema.ts';
import { EventBus } from './platform/events.ts';
import { MemoryCounterStore, RedisCounterStore } from './platform/counters/store.ts';
import { BatchedCounterStore, RedisCounterBackend } from './platform/counters/batched.ts';
import { RateLimiter } from './platform/rate-limit.ts';
import { createSecretBox, type SecretBox } from './lib/crypto.ts';
import { moneyFor } from './lib/money.ts';
import { createMetrics, type Metrics } from './platform/metrics.ts';
import { createClientService, type ClientService } from './modules/client/service.ts';
import { createCartService, type CartService } from './modules/cart/service.ts';
import { createUsageService, type UsageService } from './modules/usage/service.ts';
import { createUsagePruning, type UsagePruning } from './modules/usage/pruning.ts';
import { periodQuantities } from './modules/usage/quantities.ts';
import { createCreditService, type CreditService } from './modules/credit/service.ts';
import { createPrepaidLedger } from './modules/credit/prepaid.ts';
import { createInvoiceCredits, type InvoiceCredits } from './modules/credit/invoice-credits.ts';
import { createAutoRecharge, type AutoRecharge } from './modules/credit/auto-recharge.ts';
import { createPacks, type Packs } from './modules/credit/packs.ts';
import { watchCrossings, type Crossings } from './modules/credit/watches.ts';
import { createCronService, cronStarter, logSchedulerError, type CronService } from './modules/cron/service.ts';
import { createDueOrders } from './modules/order/due-orders.ts';
import { createRenewalsDue } from './modules/invoice/renewals-due.ts';
import { GatewayRegistry } from './modules/payment/gateways.ts';
import { customGateway } from './modules/payment/custom-gateway.ts';
import { stripeFromSettings } from './modules/payment/stripe/switch.ts';
import { createInvoiceService, type InvoiceService } from './modules/invoice/service.ts';
import { createInvoicePayments, type InvoicePayments } from './modules/invoice/payments.ts';
import { createCreditNotes, type CreditNotes } from './modules/invoice/credit-notes/service.ts';
import { createGatewayPayments, type GatewayPayments } from './modules/payment/gateway-payments.ts';
import { createChargeService, pendingEventsWorker, type ChargeService } from './modules/payment/charges.ts';
import { createInboundEvents, type InboundEvents } from './modules/payment/inbound.ts';
import { createPaymentService, type PaymentService } from './modules/payment/service.ts';
import { createTaxService, type TaxService } from './modules/invoice/taxes.ts';
import { createOrderService, type OrderService } from './modules/order/service.ts';
import { createSelfService, type SelfService } from './modules/order/self-service.ts';
import { createOrderPlacing, type OrderPlacing } from './modules/order/placing.ts';
import { createOrderTrials } from './modules/order/trials.ts';
import { createTrialJobs, type TrialJobs } from './modules/cron/trials.ts';
import { followPlanChanges } from './modules/serviceapikey/plan-change.ts';
import { customType } from './modules/product/custom-type.ts';
import { createProductService, type ProductService } from './modules/product/service.ts';
import { createPromoService, type PromoService } from './modules/product/promos.ts';
import { ProductTypeRegistry } from './modules/product/types-registry.ts';
import { createApiKeyProductType } from './modules/serviceapikey/product-type.ts';
import { registerApiKeyMetrics } from './modules/serviceapikey/metrics.ts';
import { registerCounterSyncMetrics } from './platform/counters/batched-metrics.ts';
import { createApiKeyService, type ApiKeyService } from './modules/serviceapikey/service.ts';
import { keyIsSwitchedOn } from './modules/serviceapikey/key-state.ts';
import { createUsageCloser, type UsageCloser } from './modules/serviceapikey/usage/overage.ts';
import { createSessionService, type SessionService } from './modules/session/service.ts';
import { createPortalService, type PortalService } from './modules/portal/service.ts';
import { createStaffService, type StaffService } from './modules/staff/service.ts';
import { createOutboxService, type OutboxService } from './modules/outbox/service.ts';
import { createMailService, type MailService } from './modules/email/service.ts';
import { registerNotices } from './modules/email/notices.ts';
import { clientMailRecipients } from './modules/client/mail-recipient.ts';
import { createInvoiceNoticeReads } from './modules/invoice/notice-reads.ts';
import { orderNoticeReads } from './modules/order/notice-reads.ts';
import { brandOf } from './modules/email/layout.ts';
import { createSystemService, type SystemService } from './modules/system/service.ts';
import { createTwoFactorService, type TwoFactorService } from './modules/account/two-factor.ts';
import { createAccountService, type AccountService } from './modules/account/service.ts';
import { createWebhookService, type WebhookService } from './modules/webhook/service.ts';
import { createExportService, type ExportService } from './modules/export/service.ts';
import { createCurrencyService, type CurrencyService } from './modules/currency/service.ts';
import { createActivityService, type ActivityService } from './modules/activity/service.ts';
import { createActionRecorder } from './modules/activity/recorder.ts';
import { createSystemEntries } from './modules/activity/system-entries.ts';
import { activityCsvExport, withActivityExport, type CsvExport } from './modules/activity/csv.ts';
import type { ActionRecorder } from './platform/audit.ts';
import { createSaleTax } from './modules/invoice/sale-tax.ts';
import { appliesEuRules } from './lib/eu-vat.ts';
import { correctSalesOnConfirmation } from './modules/invoice/vat-corrections.ts';
import { createOssReport, type OssReports } from './modules/invoice/oss-report.ts';
import { checkChangedNumbers, createVatChecks, type VatChecks } from './modules/vat/checks.ts';
import { createVatRates, type VatRates } from './modules/vat/rates.ts';
import { createSelling, type Selling } from './modules/currency/selling.ts';
import { createStatsService, type StatsService } from './modules/stats/service.ts';
import { withFigureExports } from './modules/stats/exports.ts';

/** Every service, built once; the registry (src/modules/index.ts) checks that they give each module what it names. */
export interface Services {
  config: Config;
  db: Kysely<Database>;
  dialect: DialectName;
  /** The PostgreSQL connection string (for LISTEN/NOTIFY); null on SQLite. */
  postgresUrl: string | null;
  secrets: SecretBox;
  events: EventBus;
  limiter: RateLimiter;
  /** Settings staff edit (CONTRACT §8): `settings.get(name)`, `settings.secret(name)`, the company details. */
  settings: SystemService;
  /** Prometheus registry behind GET /metrics; modules add their own metrics to `metrics.registry`. */
  metrics: Metrics;
  sessions: SessionService;
  /** Customer-portal links (issue 25). */
  portal: PortalService;
  staff: StaffService;
  /** CSV exports for staff (GET/POST /api/admin/export/{kind}.csv), read in batches; activity.csv is the audit log's, dashboard_*.csv the dashboard's. */
  csvExports: Omit<ExportService, 'request'> & { request(file: string): CsvExport | undefined };
  /** The audit log (docs/audit-log.md): its entries, and the gateway's recorder of changing admin actions. */
  activity: ActivityService;
  actionRecorder: ActionRecorder;
  clients: ClientService;
  /** TOTP second factor and recovery codes of clients and staff. */
  twoFactor: TwoFactorService;
  /** Password reset, e-mail confirmation and change of e-mail (mails through `mail`). */
  accounts: AccountService;
  /** Every product type that can be sold; modules register theirs here. */
  productTypes: ProductTypeRegistry;
  /** Payment gateways; the built-in `custom` one is manual payment confirmed by staff. */
  gateways: GatewayRegistry;
  products: ProductService;
  /** Coupons (admin/product/promo_*). */
  promos: PromoService;
  orders: OrderService;
  /** New orders with their invoice: the cart's checkout, admin/order/create. */
  orderPlacing: OrderPlacing;
  /** Client self-service on orders: cancel at period end, upgradables, change plan (CONTRACT §8). */
  selfService: SelfService;
  invoices: InvoiceService;
  /** Tax rules (admin/invoice/tax_*). */
  taxes: TaxService;
  carts: CartService;
  cron: CronService;
  trialJobs: TrialJobs;
  /** The API key product: keys, the check hot path, usage metering. */
  apikeys: ApiKeyService;
  /** The close of usage periods: overage invoices (CONTRACT §12). */
  usageCloser: UsageCloser;
  /** Deletes usage events past their idempotency window and the distinct values of closed periods (scheduled). */
  usagePruning: UsagePruning;
  /** The invoice's money: pay, record a refund, record a failure (what the payment module asks of it); transactions. */
  invoicePayments: InvoicePayments;
  /** Credit notes against paid invoices: refunds and credit to the balance (issue 24). */
  creditNotes: CreditNotes;
  /** EU VAT (issue 26): VIES checks of clients' VAT numbers (outbox kind `vat_check`) and the member states' rates. */
  vatChecks: VatChecks;
  vatRates: VatRates;
  ossReports: OssReports;
  credits: CreditService;
  invoiceCredits: InvoiceCredits;
  /** Top-up packs staff offer (their bonus is granted when the invoice is paid). */
  creditPacks: Packs;
  /** Auto-recharge and low-balance crossings, counted in the transaction of the debit that crossed. */
  crossings: Crossings;
  /** Auto-recharge: the outbox kind `auto_recharge` issues a top-up invoice per crossing and queues its card charge. */
  autoRecharge: AutoRecharge;
  /** Gateway payments: what providers report, handed to the invoice; refunds made at the provider; late refunds. */
  gatewayPayments: GatewayPayments;
  /** Auto-pay, gateway customers, saved cards, starting a payment. */
  payments: PaymentService;
  /** Provider webhook events: stored by id, applied once. */
  inboundEvents: InboundEvents;
  /** Off-session charges of renewal invoices: the outbox kind `card_charge`. */
  charges: ChargeService;
  /** Every side effect that leaves the process (e-mail, later webhooks and charges): one table family, one sender loop. */
  outbox: OutboxService;
  /** E-mail through the outbox: templates, the mail log. */
  mail: MailService;
  /** Webhook endpoints and their deliveries (through the outbox). */
  webhooks: WebhookService;
  /** Metered usage events in, exactly once (issue 23). */
  usage: UsageService;
  /** The instance's currencies, the default one and the rates staff set (issue 26). */
  currencies: CurrencyService;
  selling: Selling;
  /** FOSSBilling's Stats figures and the admin dashboard's (issue 25), read from the other modules' tables. */
  stats: StatsService;
  /** Started by the server process only (the in-process scheduler…); tests and the CLI never start them. */
  startTasks: Array<() => void>;
  /** Called on shutdown, in reverse order of registration (flush counters, close connections…). */
  onClose(task: () => Promise<void>): void;
  close(): Promise<void>;
}

/** Compiles only when `T` is a `U`. */
type Satisfying<T extends U, U> = T;

/** The proof that these services give every module what its actions name (a type: nothing of it exists at run time). */
export type CheckedServices = Satisfying<Services, ModuleServices>;

export function createServices(config: Config, database: DatabaseHandle, instanceSecret: string): Services {
  const { db } = database;
  const secrets = createSecretBox(instanceSecret);
  const events = new EventBus();
  // Closers run in reverse order of registration, so the database (registered first) closes last, after everything
  // that may still write to it on the way out (usage counts, scheduler).
  const closers: Array<() => Promise<void>> = [() => database.close()];

  // Rate-limit counters: in Redis when set; else, in a cluster worker, in the primary (over IPC); else in memory.
  const inCluster = cluster.isWorker && config.redisUrl === null;
  const counterStore =
    config.redisUrl !== null
      ? new RedisCounterStore(config.redisUrl, config.rateLimit.redisPrefix)
      : inCluster
        ? new ClusterCounterStore()
        : new MemoryCounterStore();
  closers.push(() => counterStore.close());
  // The key check's counters: in process, shared in batches (no round trip per check) when there is anyone to share with.
  const hotStore =
    config.redisUrl !== null
      ? new BatchedCounterStore(new RedisCounterBackend(config.redisUrl, config.rateLimit.redisPrefix))
      : inCluster
        ? new BatchedCounterStore(new ClusterCounterBackend())
        : counterStore;
  if (hotStore !== counterStore) closers.push(() => hotStore.close());
  // The per-key rate limits (CONTRACT §12) count in the same local stores as the check's policies, whether or not the
  // §4 policies are switched on; where those are in Redis without batching (never today) they get a memory store.
  const keyRateStore = hotStore instanceof BatchedCounterStore || hotStore instanceof MemoryCounterStore ? hotStore : new MemoryCounterStore();
  if (keyRateStore !== hotStore) closers.push(() => keyRateStore.close());
  const limiter = new RateLimiter(config.rateLimit, counterStore, hotStore);

  const settings = createSystemService({ db, secrets, defaults: config.settings });
  const activity = createActivityService({ db });
  const sessions = createSessionService({ db, secrets, ttlSeconds: config.sessionTtlSeconds });
  const staff = createStaffService({ db, secrets, sessions, events });
  // The instance's currencies, and which one each sale is in (issue 26): clients, carts, orders and invoices ask.
  const currencies = createCurrencyService({ db, dialect: database.dialect });
  const selling = createSelling({ db, currencies });
  const clients = createClientService({ db, secrets, events, sessions, selling });
  // The operator's brand, not ours: the company name once set, else this instance's host name (issue 21).
  const brandName = (): string => settings.peek('company_name') ?? new URL(config.publicUrl).hostname;
  const twoFactor = createTwoFactorService({ db, secrets, events, issuer: brandName });
  const productTypes = new ProductTypeRegistry();
  productTypes.register(customType);
  // Prepaid plans draw usage from the credit ledger and hold the balance on the check (issue 24 item 2).
  const prepaidLedger = createPrepaidLedger({ db, events, selling });
  const apikeys = createApiKeyService({
    db,
    dialect: database.dialect,
    postgresUrl: database.postgresUrl,
    redisUrl: config.redisUrl,
    redisPrefix: config.rateLimit.redisPrefix,
    secrets,
    limiter,
    keyRateStore,
    keyCacheSize: config.keyCacheSize,
    events,
    money: moneyFor(config.currency),
    prepaid: prepaidLedger,
    readMeters: periodQuantities,
  });
  closers.push(() => apikeys.close());
  productTypes.register(createApiKeyProductType(apikeys));
  const metrics = createMetrics(config.metricsToken !== null);
  registerApiKeyMetrics(metrics, apikeys);
  if (hotStore instanceof BatchedCounterStore) registerCounterSyncMetrics(metrics, hotStore);
  const money = moneyFor(config.currency);
  const gateways = new GatewayRegistry();
  gateways.register(customGateway(() => settings.peek('payment_instructions') ?? config.paymentInstructions));
  // Card payments: listed while both Stripe keys are set (environment or Settings), read at each use (no restart).
  gateways.register(stripeFromSettings({ secret: (name) => settings.peekSecret(name), connection: config.stripe }));
  const products = createProductService({ db, productTypes, money, selling });
  const orders = createOrderService({ db, events, productTypes, products, clients });
  // Tax applies (checkout asks for the billing country) also when the EU VAT rules decide it (issue 26).
  const taxes = createTaxService({ db, euRulesOn: async (trx) => appliesEuRules((await settings.company(trx)).country, settings.peek('eu_vat')) });
  const promos = createPromoService({ db, money });
  const creditNotes = createCreditNotes({ db, events, prefix: () => settings.peek('credit_note_prefix') ?? 'CN-' });
  const vatRates = createVatRates({ db });
  const ossReports = createOssReport({ db });
  // The VIES checks need the outbox, built below: the sale reaches them at call time.
  const saleTax = createSaleTax({
    settings,
    taxes,
    vat: {
      statusFor: (trx, clientId, vatNumber) => vatChecks.statusFor(trx, clientId, vatNumber),
      requestIfUnchecked: (trx, clientId, vatNumber, now) => vatChecks.requestIfUnchecked(trx, clientId, vatNumber, now),
      ratesIn: (trx) => vatRates.ratesIn(trx),
    },
  });
  const invoices = createInvoiceService({ db, events, orders, settings, saleTax, promos, clients, creditNotes, selling });
  correctSalesOnConfirmation({ events, creditNotes });
  const selfService = createSelfService({ db, events, orders, products, invoices, selling });
  followPlanChanges(events, apikeys);
  // A trial that needs a card reads the saved card's fingerprint from the payment service, built further down.
  const orderTrials = createOrderTrials({
    db,
    events,
    cards: { defaultCardFingerprint: (trx, clientId) => payments.defaultCardFingerprint(trx, clientId) },
    transition: (trx, id, action, options) => orders.transition(trx, id, action, options),
    expiryMoved: (trx, id) => orders.expiryMoved(trx, id),
  });
  const orderPlacing = createOrderPlacing({ db, orders, products, invoices, promos, selling, trials: orderTrials });
  const carts = createCartService({
    db,
    events,
    products,
    placing: orderPlacing,
    gateways,
    selling,
    clients,
    promos,
    taxes,
    // The payment service is built further down; these run only once a checkout is made.
    cardSetup: { available: () => payments.canSetUpCards(), start: (clientId, path) => payments.startSetup(clientId, path) },
  });
  const outbox = createOutboxService({
    db,
    dialect: database.dialect,
    pollMs: config.outboxPollMs,
    leaseMs: config.outboxLeaseSeconds * 1000,
  });
  const vatChecks = createVatChecks({ db, events, outbox, settings, timeoutMs: config.viesTimeoutMs });
  checkChangedNumbers(events, vatChecks);
  const mail = createMailService({
    db,
    outbox,
    secrets,
    // Read at each message (Settings → Mail, or SMTP_URL as its default): a change needs no restart.
    smtpUrl: () => settings.peekSecret('smtp_url') ?? config.smtpUrl,
    smtpPassword: () => settings.peekSecret('smtp_password'),
    brand: async (trx) => brandOf(await settings.company(trx)),
    mailFrom: config.mailFrom,
    publicUrl: config.publicUrl,
    smtpTimeoutMs: config.smtpTimeoutMs,
    // The receipt (invoice_paid) carries the invoice PDF, rendered at send time from the invoice id.
    invoicePdf: invoices,
  });
  // The SMTP connection closes after the sender loop has stopped (closers run in reverse).
  closers.push(async () => mail.close());
  const accounts = createAccountService({
    db,
    secrets,
    events,
    mail,
    clients,
    staff,
    twoFactor,
    publicUrl: config.publicUrl,
    requireEmailVerification: () => settings.peek('require_email_verification'),
  });
  closers.push(() => outbox.stop());
  const webhooks = createWebhookService({
    db,
    outbox,
    secrets,
    events,
    allowPrivate: config.webhookAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
  });
  const notices = registerNotices({ db, events, mail, clients: clientMailRecipients, invoices: createInvoiceNoticeReads({ db }), orders: orderNoticeReads, outbox, keyIsSwitchedOn, publicUrl: config.publicUrl, reminderDays: () => settings.peek('invoice_reminder_days') });
  const usage = createUsageService({ db, dialect: database.dialect, secrets, log: logSchedulerError });
  const stats = createStatsService({ db, dialect: database.dialect, selling });
  // Prepaid draws first (the balance the check holds is re-read after them), then hard limits (the keys of an order at
  // a limit are refused sooner), then the alerts.
  usage.onMeasured((measured) => apikeys.prepaidMeasured(measured));
  usage.onMeasured((measured) => apikeys.metersMeasured(measured));
  usage.onMeasured((measured) => apikeys.alertOnMeasured(measured));
  const usagePruning = createUsagePruning({ db });
  const usageCloser = createUsageCloser({
    db,
    dialect: database.dialect,
    invoices,
    money,
    selling,
    flushUsage: () => apikeys.flushUsage(),
    drawPrepaid: (orderId, periodStart) => apikeys.drawPrepaid(orderId, periodStart),
    log: logSchedulerError,
  });
  const credits = createCreditService({ db, events, selling, log: logSchedulerError });
  const invoicePayments = createInvoicePayments({ db, events, invoices, creditNotes });
  const invoiceCredits = createInvoiceCredits({
    db,
    events,
    selling,
    invoices,
    invoicePayments,
    settings: { fundsMin: () => settings.peek('funds_min_amount'), fundsMax: () => settings.peek('funds_max_amount'), payInvoices: () => settings.peek('credits_pay_invoices') },
  });
  const trialJobs = createTrialJobs({ db, orders, trials: orderTrials, invoices, payments: { chargeableMethod: (trx, clientId) => payments.chargeableMethod(trx, clientId) }, log: logSchedulerError });
  const cron = createCronService({
    db,
    orders,
    dueOrders: createDueOrders({ db }),
    invoices,
    renewalsDue: createRenewalsDue({ db }),
    carts,
    invoiceDaysBeforeExpiry: config.invoiceDaysBeforeExpiry,
    cancelSuspendedAfterDays: config.cancelSuspendedAfterDays,
    reminders: notices,
    usage: usageCloser,
    // Key analytics' retention (minutes 48 h, hours 90 days, days 2 years) is pruned with the usage events.
    usagePruning: { prune: async (now: Date) => [await usagePruning.prune(now), await apikeys.pruneAnalytics(now)] },
    credits,
    audit: createSystemEntries({ activity, retentionDays: () => settings.peek('audit_retention_days') }),
    trials: trialJobs,
    log: logSchedulerError,
  });
  const gatewayPayments = createGatewayPayments({ db, gateways, invoicePayments, outbox, log: logSchedulerError });
  const payments = createPaymentService({
    db,
    events,
    gateways,
    clients,
    selling,
    invoices: invoicePayments,
    publicUrl: config.publicUrl,
    autoPayDefault: () => settings.peek('auto_pay_default'),
  });
  const inboundEvents = createInboundEvents({ db, gateways, gatewayPayments, payments, log: logSchedulerError });
  const charges = createChargeService({
    db,
    events,
    outbox,
    gatewayPayments,
    invoicePayments,
    payments,
    retryDays: () => settings.peek('dunning_retry_days'),
    log: logSchedulerError,
  });
  const creditPacks = createPacks({ db, events, selling, invoices });
  const crossings = watchCrossings({ db, events, outbox });
  const autoRecharge = createAutoRecharge({
    db,
    selling,
    outbox,
    invoices,
    charges,
    payments,
    crossings,
    settings: { fundsMin: () => settings.peek('funds_min_amount'), fundsMax: () => settings.peek('funds_max_amount') },
  });
  const startTasks: Array<() => void> = [() => outbox.start()];
  // Messages that waited for a mail server go out once one is configured (SMTP_URL set before this start).
  startTasks.push(() => void mail.releaseWaiting().catch((error: unknown) => logSchedulerError('releasing waiting mail failed', error)));
  if (config.scheduler) startTasks.push(cronStarter(cron, (task) => closers.push(task), logSchedulerError));
  // Provider events stored but not applied (a crash in between) are applied at start and every minute.
  startTasks.push(pendingEventsWorker(() => inboundEvents.processPending(), (task) => closers.push(task), logSchedulerError));

  return {
    config,
    db,
    dialect: database.dialect,
    postgresUrl: database.postgresUrl,
    secrets,
    events,
    limiter,
    settings,
    metrics,
    sessions,
    portal: createPortalService({ db, secrets, clients, frameAncestors: () => settings.peek('portal_frame_ancestors'), publicUrl: config.publicUrl }),
    staff,
    csvExports: withFigureExports(withActivityExport(createExportService({ db, clients, ossReports, selling }), activityCsvExport(activity)), stats),
    activity,
    actionRecorder: createActionRecorder({ db, activity }),
    clients,
    twoFactor,
    accounts,
    productTypes,
    gateways,
    products,
    promos,
    orders,
    orderPlacing,
    selfService,
    invoices,
    taxes,
    carts,
    cron,
    trialJobs,
    apikeys,
    usageCloser,
    usagePruning,
    invoicePayments,
    creditNotes,
    vatChecks,
    vatRates,
    ossReports,
    credits,
    invoiceCredits,
    creditPacks,
    crossings,
    autoRecharge,
    gatewayPayments,
    payments,
    inboundEvents,
    charges,
    outbox,
    mail,
    webhooks,
    usage,
    currencies,
    selling,
    stats,
    startTasks,
    onClose: (task) => void closers.push(task),
    async close() {
      for (const task of closers.toReversed()) await task();
    },
  };
}
