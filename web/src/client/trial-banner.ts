// The client area's free-trial banner (issue 24), above every page while a client is logged in: a trial that ends
// within three days ("Your free trial of Pro ends on 2026-12-01 — add a card", or that the saved card will be
// charged), and a trial that waits for a card to start. "Add a card" goes to the profile's card section.
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { formatDate } from '../lib/format.ts';
import { Link } from '../lib/router.ts';
import { useLoad } from '../lib/ui.ts';

/** Trials end this close to now before the banner reminds (the reminder mail's window, lib/trial.ts). */
const REMIND_MS = 3 * 86_400_000;

export function TrialBanner() {
  const orders = useLoad(() => call('client/order/get_list', { per_page: 100 }), []);
  const cards = useLoad(() => call('client/payment_method/get_list'), []);
  if (orders.data === undefined || cards.data === undefined) return null;
  const hasCard = cards.data.length > 0;
  const now = Date.now();
  const ending = orders.data.list.filter((order) => order.on_trial && order.trial_ends_at !== null && Date.parse(order.trial_ends_at) - now <= REMIND_MS && !order.cancel_at_period_end);
  const waiting = orders.data.list.filter((order) => order.trial_awaiting_card);
  if (ending.length === 0 && waiting.length === 0) return null;
  return html`<div class="notice trial-banner" role="status" data-testid="trial-banner">
    ${ending.map(
      (order) => html`<p>
        Your free trial of <strong>${order.title}</strong> ends on ${formatDate(order.trial_ends_at)}${hasCard
          ? '; your saved card will then be charged for the first period.'
          : html` — <${Link} href="/profile#cards-title">add a card<//> to keep it running.`}
      </p>`,
    )}
    ${waiting.map((order) => html`<p>Your free trial of <strong>${order.title}</strong> starts once you <${Link} href="/profile#cards-title">add a card<//>.</p>`)}
  </div>`;
}
