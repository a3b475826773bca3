// What each API module is for: the tags of the OpenAPI document (CONTRACT §11). One line per module name.
export const MODULE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  system: 'Version, settings, company details, countries and the instance’s own state',
  staff: 'Staff accounts, groups and permissions; staff login and password reset',
  client: 'Client accounts: sign-up, login, password reset, e-mail confirmation, and staff management of clients',
  profile: 'The caller’s own account: details, password, API token, e-mail address and two-factor login',
  product: 'The catalogue: products, their pricing and settings, and coupons',
  cart: 'The cart of a guest session or a client, coupons, and checkout',
  order: 'Orders and their status machine; clients’ own orders, cancellation at period end and plan changes',
  invoice: 'Invoices, tax rules, payments, refunds and transactions; paying an invoice by its hash',
  cron: 'The scheduled jobs: renewal invoices, suspension, cancellation, clean-up and reminders',
  serviceapikey: 'The API key product: checking keys, usage, per-key limits and verifier credentials',
  payment_method: 'Saved payment methods (cards) for automatic payment of renewals',
  email: 'The mail log and the templates of the messages Tollgate sends',
  webhook: 'Outgoing webhooks: endpoints, secrets, deliveries and retries',
  portal: 'The customer portal to embed: single-use links that open a client session restricted to its scopes',
  currency: 'The instance’s currencies, the default one, the exchange rates staff set and their history; formatting prices',
  usage: 'Metered usage events (tokens, bytes, seconds…): ingestion, exactly once per order and event id',
};
