// The Stripe gateway as the settings say at each use (issue 21): the keys are read at every call (the system
// service's in-process copy, no database round trip), so storing, replacing or clearing them in Settings takes effect
// without a restart, in every process within the settings cache's lifetime. The gateway is listed only while both
// keys are set. The Stripe library is loaded on the first call that needs it, never at start (issue 13's cold start),
// and a client is built once per key pair. This file must not import `stripe` (nor gateway.ts) statically.
import type { StripeConnection } from '../../../config.ts';
import type { PaymentGateway } from '../gateways.ts';
import type { GatewayLog } from '../gateway-failures.ts';
import { STRIPE_CODE, STRIPE_GATEWAY_ID, STRIPE_INSTRUCTIONS, STRIPE_TITLE } from './names.ts';

type StripeModule = typeof import('./gateway.ts');

export interface StripeSwitchDeps {
  /** A secret setting's clear value now (`settings.peekSecret`), null when unset. */
  secret: (name: 'stripe_secret_key' | 'stripe_webhook_secret') => string | null;
  connection: StripeConnection;
  log?: GatewayLog;
}

export function stripeFromSettings({ secret, connection, log }: StripeSwitchDeps): PaymentGateway {
  let library: Promise<StripeModule> | null = null;
  let current: { secretKey: string; webhookSecret: string; gateway: PaymentGateway } | null = null;

  const keys = (): { secretKey: string; webhookSecret: string } | null => {
    const secretKey = secret('stripe_secret_key');
    const webhookSecret = secret('stripe_webhook_secret');
    return secretKey === null || webhookSecret === null ? null : { secretKey, webhookSecret };
  };

  /** The gateway for the keys in force now. */
  async function gateway(): Promise<PaymentGateway> {
    const now = keys();
    // Cleared between the listing and this call: the caller answers 502 with describeFailure's sentence.
    if (now === null) throw new StripeNotConfigured();
    const module = await (library ??= import('./gateway.ts'));
    if (current === null || current.secretKey !== now.secretKey || current.webhookSecret !== now.webhookSecret) {
      current = { ...now, gateway: module.stripeGateway({ ...connection, ...now }, log) };
    }
    return current.gateway;
  }

  return {
    id: STRIPE_GATEWAY_ID,
    code: STRIPE_CODE,
    title: STRIPE_TITLE,
    available: () => keys() !== null,
    instructions: () => STRIPE_INSTRUCTIONS,
    createCustomer: async (client) => (await gateway()).createCustomer!(client),
    startPayment: async (request) => (await gateway()).startPayment!(request),
    startSetup: async (request) => (await gateway()).startSetup!(request),
    chargeSavedMethod: async (request) => (await gateway()).chargeSavedMethod!(request),
    refund: async (request) => (await gateway()).refund!(request),
    detachMethod: async (methodRef) => (await gateway()).detachMethod!(methodRef),
    verifyEvent: async (rawBody, headers) => (await gateway()).verifyEvent!(rawBody, headers),
    interpretEvent: async (event) => (await gateway()).interpretEvent!(event),
    describeFailure(error) {
      if (error instanceof StripeNotConfigured) return 'Card payments are not configured on this installation; choose another way to pay.';
      // The library is loaded once any call reached Stripe; a failure before that is not Stripe's.
      return current?.gateway.describeFailure?.(error) ?? 'Stripe could not complete the request; nothing was charged. Try again in a moment.';
    },
  };
}

class StripeNotConfigured extends Error {
  constructor() {
    super('Stripe is not configured (stripe_secret_key and stripe_webhook_secret)');
    this.name = 'StripeNotConfigured';
  }
}
