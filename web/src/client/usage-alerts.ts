// "Usage alerts" on the client's keys page (issue 23 item 7): for each meter of the order's plan, the plan's alert
// percentages and a field for the client's own (e.g. "50, 90"), saved with client/serviceapikey/alerts_set. Each is
// sent as a mail (and the operator's webhook) once per usage period. The server checks the numbers (whole, 1–100, at
// most ten, no repeats) and its message is shown as sent.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatNumber } from '../lib/format.ts';
import { Button, ErrorMessage, Field, FormError, Notice, useAction, useLoad } from '../lib/ui.ts';

interface MeterAlerts {
  meter: string;
  name: string;
  unit: string;
  included: number | null;
  plan: number[];
  client: number[];
}

/** "50, 90" → [50, 90]; what is not a number is sent as is (null in JSON), for the server to name. */
export function parsePercentages(text: string): number[] {
  return text
    .split(/[\s,;%]+/)
    .filter((part) => part !== '')
    .map((part) => Number(part));
}

function MeterAlertForm({ orderId, meter, onSaved }: { orderId: number; meter: MeterAlerts; onSaved: () => void }) {
  const [text, setText] = useState(meter.client.join(', '));
  const [saved, setSaved] = useState<string | null>(null);
  const save = useAction();
  const planText = meter.plan.length === 0 ? 'none' : meter.plan.map((percentage) => `${percentage}%`).join(', ');
  const hint =
    meter.included === null
      ? `Unlimited ${meter.unit}: no alerts are sent for ${meter.name}.`
      : `Of ${formatNumber(meter.included)} ${meter.unit} included per period. The plan's alerts: ${planText}. Yours are sent too, each once per period; leave empty for none.`;
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void save.run(async () => {
      await call('client/serviceapikey/alerts_set', { order_id: orderId, meter: meter.meter, percentages: parsePercentages(text) });
      setSaved(`Saved the alerts for ${meter.name}.`);
      onSaved();
    });
  };
  // The messages sit under the form row, so they never narrow the field.
  return html`<div data-testid=${`alerts-${meter.meter}`}>
    <form class="row" onSubmit=${submit} aria-label=${`Usage alerts for ${meter.name}`}>
      <${Field} label=${`${meter.name}: your alerts (% of included)`} name="percentages" value=${text} onInput=${setText} hint=${hint} error=${save.error} inputmode="numeric" />
      <${Button} type="submit" busy=${save.busy}>Save<//>
    </form>
    <${FormError} error=${save.error} fields=${['percentages']} />
    <${Notice}>${saved}<//>
  </div>`;
}

export function UsageAlerts({ orderId }: { orderId: number }) {
  const alerts = useLoad(() => call('client/serviceapikey/alerts_get', { order_id: orderId }), [orderId]);
  return html`<section aria-label="Usage alerts">
    <h3>Usage alerts</h3>
    <${ErrorMessage} error=${alerts.error} />
    ${alerts.data?.meters.map((meter) => html`<${MeterAlertForm} key=${meter.meter} orderId=${orderId} meter=${meter} onSaved=${alerts.reload} />`)}
  </section>`;
}
