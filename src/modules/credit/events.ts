// The events the credit module emits.
/** Amounts in minor units. */
export interface LowBalanceEvent {
  clientId: number;
  currency: string;
  balance: number;
  threshold: number;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    /**
     * A debit took the balance below the client's low-balance amount (once per crossing: it must rise to the amount
     * again before it can cross again). Amounts in minor units.
     */
    'wallet.low_balance': LowBalanceEvent;
  }
}
