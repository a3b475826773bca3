// Events of the credit module, emitted inside the transaction of the change (webhooks).

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
    'wallet.depleted': WalletDepleted;
  }
}
