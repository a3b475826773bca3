// Events of the client service, emitted inside the transaction of the change they report.
export interface ClientSignedUp {
  clientId: number;
  email: string;
  firstName: string;
}

export interface ClientCreatedEvent {
  clientId: number;
}

declare module '../../events.ts' {
  interface TollgateEvents {
    /** A guest signed up (guest/client/create); staff-created accounts do not emit it. */
    'client.signed_up': ClientSignedUp;
    /** A client account was created (sign-up or staff), inside the creating transaction. */
    'client.created': ClientCreatedEvent;
  }
}
