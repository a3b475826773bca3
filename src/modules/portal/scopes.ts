// What a customer-portal session may call: each scope opens a fixed list of client actions, and nothing else is open
// (deny by default). The gateway asks `portalScopesOf` once per route at start-up and refuses a portal session any
// client action none of its scopes opens; admin actions are out of reach anyway (a portal session is a client's).
// Never in any scope: the profile (password, two-factor, e-mail, API token), the cart and checkout, orders' plan
// changes and cancellations, saved cards, messages.

export const PORTAL_SCOPES = ['keys', 'usage', 'invoices', 'wallet'] as const;
export type PortalScope = (typeof PORTAL_SCOPES)[number];

/** The portal's own action, open to every portal session: who it is for, what it may show, where "Back" leads. */
const ALWAYS = ['portal/get'] as const;

/** `module/action` of the client actions each scope opens. */
export const PORTAL_SCOPE_ACTIONS: Readonly<Record<PortalScope, readonly string[]>> = {
  // The API keys page: each order's keys (read, show, copy) and "Reset key"; not create, rename or delete.
  keys: ['serviceapikey/get_list', 'serviceapikey/reset', 'order/get_list', 'order/get', 'order/service'],
  // Usage and analytics: uses per day and per meter, alert levels (read), the key analytics chart. No key values:
  // order/service (which shows the key) is the `keys` scope's.
  usage: ['serviceapikey/usage', 'serviceapikey/alerts_get', 'serviceapikey/analytics', 'order/get_list', 'order/get'],
  // Invoices and credit notes, with their PDFs.
  invoices: ['invoice/get_list', 'invoice/get', 'invoice/pdf', 'invoice/credit_note_get_list', 'invoice/credit_note_get', 'invoice/credit_note_pdf'],
  // The wallet page: balance and its lines, top-ups (packs and amounts), paying an own invoice from the balance,
  // auto-recharge and the low-balance alert.
  wallet: [
    'client/balance_get_total',
    'client/balance_get_list',
    'invoice/funds_invoice',
    'invoice/pay_with_credits',
    'credit/pack_get_list',
    'credit/pack_buy',
    'credit/auto_recharge_get',
    'credit/auto_recharge_set',
    'credit/low_balance_get',
    'credit/low_balance_set',
  ],
};

/**
 * The scopes that open the client action `module/action` to a portal session: empty when none does (refused), and
 * every scope for the portal's own actions.
 */
export function portalScopesOf(module: string, action: string): readonly string[] {
  const name = `${module}/${action}`;
  if ((ALWAYS as readonly string[]).includes(name)) return PORTAL_SCOPES;
  return PORTAL_SCOPES.filter((scope) => PORTAL_SCOPE_ACTIONS[scope].includes(name));
}
