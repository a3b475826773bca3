// Events of the client service, emitted inside the transaction of the change they report.
export interface ClientSignedUp {
  clientId: number;
  email: string;
  firstName: string;
}

export interface ClientCreatedEvent {
  clientId: number;
}

/** A new password or a new e-mail address: outstanding reset links are voided (issue 20 L1/L2). */
export interface ClientCredentialsChanged {
  clientId: number;
  reason: 'password' | 'email';
}

/** The client's VAT number or billing country changed (the vat module checks the number with VIES). */
export interface ClientVatNumberChanged {
  clientId: number;
  vatNumber: string | null;
  country: string | null;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    /** A guest signed up (guest/client/create); staff-created accounts do not emit it. */
    'client.signed_up': ClientSignedUp;
    /** A client account was created (sign-up or staff), inside the creating transaction. */
    'client.created': ClientCreatedEvent;
    /** The password or the address changed (by the client or by staff), inside the changing transaction. */
    'client.credentials_changed': ClientCredentialsChanged;
    /** Inside the transaction that changed the VAT number or the country of a client that has one. */
    'client.vat_number_changed': ClientVatNumberChanged;
  }
}
