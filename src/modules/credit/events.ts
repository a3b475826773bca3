// Events of the credit module, emitted inside the transaction of the change (webhooks, mail).

/** A balance fell below the client's low-balance amount. Amounts in minor units. */
export interface LowBalanceEvent {
  clientId: number;
  currency: string;
  balance: number;
  threshold: number;
}

/**
 * A prepaid plan's key was first refused for NO_CREDIT since the client's last credit (issue 24 item 6): once per
 * depletion, whichever process refused first. `balance` is the decimal balance then (at or below the plan's floor).
 */
export interface WalletDepleted {
  clientId: number;
  orderId: number;
  balance: string;
  currency: string;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    /**
     * A debit took the balance below the client's low-balance amount (once per crossing: it must rise to the amount
     * again before it can cross again). Amounts in minor units.
     */
    'wallet.low_balance': LowBalanceEvent;
    'wallet.depleted': WalletDepleted;
  }
}
