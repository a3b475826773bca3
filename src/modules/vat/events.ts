// Events of the vat module, emitted inside the transaction that stores the VIES answer they report.

/** VIES confirmed a client's VAT number that was not confirmed before (the invoice module corrects open sales). */
export interface VatNumberConfirmed {
  clientId: number;
  /** The number confirmed, with its prefix (DE123456789). */
  vatNumber: string;
  consultationNumber: string | null;
  checkedAt: string;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    'vat.number_confirmed': VatNumberConfirmed;
  }
}
