// What the buyer's and the product editor's forms need to know about selling on this instance (guest/system/billing,
// fetched once per page load): the currency prices are in (the price preview and the usage terms word amounts in it,
// never a hard-coded "$"), and whether tax rules exist (then sign-up asks for the billing country, issue 21 item 8).
import { call, type Result } from './api.ts';
import { useLoad } from './ui.ts';

export type BillingInfo = Result<'guest/system/billing'>;

let loaded: Promise<BillingInfo> | null = null;

/** guest/system/billing, fetched once per page load (retried after a failure). */
export function billingInfo(): Promise<BillingInfo> {
  loaded ??= call('guest/system/billing').catch((error: unknown) => {
    loaded = null;
    throw error;
  });
  return loaded;
}

/** The billing facts for a component (undefined while loading). */
export function useBillingInfo(): BillingInfo | undefined {
  return useLoad(billingInfo, []).data;
}
