// What names the Stripe gateway wherever it is stored or chosen, shared by the switch (settings, loaded at start) and
// the gateway (the library, loaded on first use): kept apart so neither file imports the other for them.

/** Stable id and code of the Stripe gateway (what `gateway_id` parameters and stored payments name). */
export const STRIPE_GATEWAY_ID = 2;
export const STRIPE_CODE = 'stripe';
export const STRIPE_TITLE = 'Card (Stripe)';
export const STRIPE_INSTRUCTIONS = 'Pay by card on Stripe’s secure page.';
