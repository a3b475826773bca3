// Whose cart: a client's, or a guest session's (by the session's id hash).
export type CartOwner = { clientId: number } | { sessionHash: string };
