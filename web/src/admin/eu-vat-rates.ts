// The Taxes page's EU VAT part (issue 26): the member states' rates (admin/invoice/vat_rate_*), editable, and the
// One-Stop-Shop report of a quarter (admin/invoice/oss_report) with its CSV download.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, type Result } from '../lib/api.ts';
import { announce, Button, ErrorMessage, Field, FormError, useAction, useLoad } from '../lib/ui.ts';
import { DataTable } from './common.ts';

type Rate = Result<'admin/invoice/vat_rate_get_list'>[number];
type OssLine = Result<'admin/invoice/oss_report'>['lines'][number];

function currentQuarter(): string {
  const now = new Date();
  return `${now.getUTCFullYear()}-Q${Math.floor(now.getUTCMonth() / 3) + 1}`;
}

function RateEditor({ rate, onSaved }: { rate: Rate; onSaved: () => void }) {
  const [value, setValue] = useState(rate.rate);
  const save = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void save.run(async () => {
      await call('admin/invoice/vat_rate_update', { country: rate.country, rate: value.trim() });
      announce(`${rate.name}: ${value.trim()}%`);
      onSaved();
    });
  };
  return html`<form class="inline" onSubmit=${submit}>
    <${Field} label=${`Rate for ${rate.name} (%)`} name="rate" value=${value} onInput=${setValue} error=${save.error} inputMode="decimal" />
    <${Button} type="submit" busy=${save.busy} label=${`Save the rate for ${rate.name}`}>Save<//>
    <${FormError} error=${save.error} fields=${['rate', 'country']} />
  </form>`;
}

export function EuVatSection() {
  const rates = useLoad(() => call('admin/invoice/vat_rate_get_list'), []);
  const [quarter, setQuarter] = useState(currentQuarter());
  const report = useAction();
  const [shown, setShown] = useState<Result<'admin/invoice/oss_report'> | null>(null);
  const show = (event: Event): void => {
    event.preventDefault();
    void report.run(async () => setShown(await call('admin/invoice/oss_report', { quarter: quarter.trim() })));
  };
  return html`<section class="card" aria-labelledby="eu-vat-rates">
      <h2 id="eu-vat-rates">EU VAT rates</h2>
      <p class="hint">Used when the EU VAT rules are on (Settings: EU VAT, with the company's country in the EU): sales to consumers in another member state are taxed at their country's rate. Invoices already issued keep their rate.</p>
      <${ErrorMessage} error=${rates.error} />
      ${rates.data !== undefined
        ? html`<${DataTable}
            caption="EU VAT rates"
            busy=${rates.loading}
            rows=${rates.data}
            columns=${[
              ['Country', (rate: Rate) => `${rate.name} (${rate.country})`],
              ['Standard rate', (rate: Rate) => `${rate.standard_rate}%`, 'num'],
              ['Rate in use', (rate: Rate) => html`<${RateEditor} key=${`${rate.country}-${rate.updated_at}`} rate=${rate} onSaved=${rates.reload} />`],
            ]}
          />`
        : null}
    </section>
    <section class="card" aria-labelledby="oss-report">
      <h2 id="oss-report">One-Stop-Shop report</h2>
      <p class="hint">Net and VAT per country and rate of consumer sales to other EU countries, by payment date, less the credit notes of the quarter.</p>
      <form class="inline" onSubmit=${show}>
        <${Field} label="Quarter (e.g. 2026-Q4)" name="quarter" value=${quarter} onInput=${setQuarter} error=${report.error} />
        <${Button} type="submit" busy=${report.busy}>Show report<//>
        <a class="button" href=${`/api/admin/export/oss_report.csv?quarter=${encodeURIComponent(quarter.trim())}`} download>Download CSV</a>
      </form>
      <${FormError} error=${report.error} fields=${['quarter']} />
      ${shown !== null
        ? html`<${DataTable}
            caption=${`One-Stop-Shop report ${shown.quarter}`}
            rows=${shown.lines}
            columns=${[
              ['Country', (line: OssLine) => line.country],
              ['Rate', (line: OssLine) => `${line.rate}%`, 'num'],
              ['Currency', (line: OssLine) => line.currency],
              ['Net', (line: OssLine) => line.net, 'num'],
              ['VAT', (line: OssLine) => line.vat, 'num'],
              ['Invoices', (line: OssLine) => String(line.invoices), 'num'],
              ['Credit notes', (line: OssLine) => String(line.credit_notes), 'num'],
            ]}
          />`
        : null}
    </section>`;
}
