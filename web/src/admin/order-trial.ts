// The admin panel's view of a free trial (issue 24): on the orders list a "Trial until …" note beside the status, and
// on the order page the trial's end, whether the client has a card on file (the end charges it), and the two staff
// actions — end the trial now (admin/order/trial_end) or extend it by a number of days (admin/order/trial_extend).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDate, formatDateTime } from '../lib/format.ts';
import { Button, Confirm, DefinitionList, ErrorMessage, Field, FormError, Notice, useAction } from '../lib/ui.ts';
import type { AdminOrder } from '../lib/types.ts';

type TrialFields = Pick<AdminOrder, 'on_trial' | 'trial_ends_at' | 'trial_awaiting_card'>;

/** The trial note of an order in a list: "Trial until 2026-12-01", "Trial waits for a card", or null. */
export function trialNote(order: TrialFields): string | null {
  if (order.on_trial && order.trial_ends_at) return `Trial until ${formatDate(order.trial_ends_at)}`;
  return order.trial_awaiting_card ? 'Trial waits for a card' : null;
}

/** The order page's "Free trial" section; nothing for an order that is not on (or waiting for) a trial. */
export function TrialSection({ order, onDone }: { order: AdminOrder; onDone: () => void }) {
  const [days, setDays] = useState('7');
  const [confirming, setConfirming] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const end = useAction();
  const extend = useAction();
  if (!order.on_trial && !order.trial_awaiting_card) return null;
  const endNow = (): void => {
    void end.run(async () => {
      await call('admin/order/trial_end', { id: order.id });
      setConfirming(false);
      setDone('The trial has ended.');
      onDone();
    });
  };
  const submit = (event: Event): void => {
    event.preventDefault();
    setDone(null);
    void extend.run(async () => {
      const until = await call('admin/order/trial_extend', { id: order.id, days: Number(days) });
      setDone(`The trial now ends on ${formatDateTime(until)}.`);
      onDone();
    });
  };
  return html`<section class="card" aria-labelledby="order-trial" data-testid="order-trial">
    <h2 id="order-trial">Free trial</h2>
    <${DefinitionList}
      items=${[
        ['Trial', order.on_trial ? `Running until ${formatDateTime(order.trial_ends_at)}` : 'Waiting for the client to save a card'],
        ['Card on file', order.card_on_file ? 'Yes: the first invoice is charged to it when the trial ends' : 'No: the order is suspended when the trial ends, until the invoice is paid'],
      ]}
    />
    <${Notice}>${done}<//>
    ${order.on_trial
      ? html`<form class="row" onSubmit=${submit} aria-label="Extend the trial">
            <${Field} label="Extend by (days)" name="days" type="number" value=${days} onInput=${setDays} error=${extend.error} hint="1 to 365 days" />
            <${Button} type="submit" busy=${extend.busy}>Extend trial<//>
          </form>
          <${FormError} error=${extend.error} fields=${['days']} />
          <${ErrorMessage} error=${end.error} />
          <div class="actions">
            ${confirming
              ? html`<${Confirm} question="End the free trial now? The first invoice is issued at once." confirmLabel="End trial now" busy=${end.busy} onConfirm=${endNow} onCancel=${() => setConfirming(false)} />`
              : html`<${Button} onClick=${() => setConfirming(true)}>End trial now<//>`}
          </div>`
      : null}
  </section>`;
}
