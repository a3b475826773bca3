// Events of the API key product, emitted inside the transaction of the change (security notices, webhooks).
export interface ApiKeyEvent {
  orderId: number;
  clientId: number;
  keyId: number;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    /** A key was replaced by a new one (staff or the client); the old one stopped validating. */
    'apikey.reset': ApiKeyEvent;
    /** Staff switched a key off (its `valid` flag went from on to off). */
    'apikey.disabled': ApiKeyEvent;
    /** An order's key was issued (its first activation). */
    'apikey.issued': ApiKeyEvent;
    /** Staff switched a key back on (its `valid` flag went from off to on). */
    'apikey.enabled': ApiKeyEvent;
    /** Staff changed a key's custom parameters. */
    'apikey.updated': ApiKeyEvent;
    /**
     * A meter of an order (`calls`, the built-in one, or one of the plan's) reached `threshold` percent of its included
     * units in the usage period starting at `periodStart` (usage/alert-sender.ts): a percentage of the plan's or one the
     * client added. `meterName` and `unit` are the plan's words for the meter (for the mail).
     */
    'usage.threshold_reached': {
      orderId: number;
      clientId: number;
      meter: string;
      meterName: string;
      unit: string;
      threshold: number;
      used: number;
      included: number;
      periodStart: string;
    };
  }
}
