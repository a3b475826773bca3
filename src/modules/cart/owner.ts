// Whose cart: a client's, or a guest session's (by the session's id hash).
export type CartOwner = { clientId: number } | { sessionHash: string };

/** The owner as the cart tables' two columns: one set, the other null. */
export function ownerColumns(owner: CartOwner): { client_id: number | null; session_hash: string | null } {
  return { client_id: 'clientId' in owner ? owner.clientId : null, session_hash: 'sessionHash' in owner ? owner.sessionHash : null };
}
