// Staff permissions that more than one part of the house names: the staff module grants them, a module's actions
// require them, http/ checks them on routes that are not actions. Here, below all three, so none imports another.

/** The permission of verifier credentials (CONTRACT §11): checking keys, their events stream, reporting uses. */
export const VERIFIER_PERMISSION = 'serviceapikey.check';

/**
 * Making customer-portal links (`admin/portal/session_create`, issue 25). Staff hold it like any permission; a
 * verifier token holds it when made with the `portal` scope (its group grants `serviceapikey.check` and this).
 */
export const PORTAL_PERMISSION = 'portal.session';
