// Events of client accounts declared by the client module beside the core ones in src/events.ts.
export interface ClientCreatedEvent {
  clientId: number;
}

declare module '../../events.ts' {
  interface TollgateEvents {
    /** A client account was created (sign-up or staff), inside the creating transaction. */
    'client.created': ClientCreatedEvent;
  }
}
