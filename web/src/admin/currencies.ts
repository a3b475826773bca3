// Staff: the instance's currencies (admin/currency/*): the list with each rate and when it was set, adding an ISO 4217
// currency with its rate, editing a rate (kept in the history), making a currency the default, deleting one.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import type { ListItem } from '../lib/actions.ts';
import { formatDateTime } from '../lib/format.ts';
import { announce, Button, Confirm, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import { DataTable, type Column } from './common.ts';
import { useRowActions } from './row-actions.ts';

type Currency = ListItem<'admin/currency/get_list'>;

function AddCurrency({ defaultCode, onAdded }: { defaultCode: string; onAdded: (code: string) => void }) {
  const pairs = useLoad(() => call('admin/currency/get_pairs'), []);
  const [code, setCode] = useState('');
  const [rate, setRate] = useState('');
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      const added = await call('admin/currency/create', { code, conversion_rate: rate });
      setCode('');
      setRate('');
      announce(`${added} added`);
      onAdded(added);
    });
  };
  const options: Array<readonly [string, string]> = [['', 'Choose a currency'], ...Object.entries(pairs.data ?? {})];
  return html`<form class="card row" onSubmit=${submit} aria-labelledby="currency-add">
    <h2 id="currency-add" class="sr-only">Add a currency</h2>
    <${Field} label="Currency" name="code" required value=${code} onInput=${setCode} options=${options} error=${action.error} />
    <${Field} label="Rate" name="conversion_rate" required value=${rate} onInput=${setRate} inputmode="decimal" error=${action.error} hint=${`Units of it that 1 ${defaultCode} buys`} />
    <${Button} type="submit" variant="primary" busy=${action.busy}>Add currency<//>
    <${FormError} error=${action.error} fields=${['code', 'conversion_rate']} />
  </form>`;
}

function RateForm({ currency, onSaved }: { currency: Currency; onSaved: () => void }) {
  const [rate, setRate] = useState(currency.conversion_rate);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      await call('admin/currency/update', { code: currency.code, conversion_rate: rate });
      announce(`Rate of ${currency.code} saved`);
      onSaved();
    });
  };
  return html`<form class="row" onSubmit=${submit} aria-label=${`Change the rate of ${currency.code}`}>
    <${Field} label=${`Rate of ${currency.code}`} name="conversion_rate" value=${rate} onInput=${setRate} inputmode="decimal" error=${action.error} />
    <${Button} type="submit" busy=${action.busy} label=${`Save the rate of ${currency.code}`}>Save<//>
    <${FormError} error=${action.error} fields=${['conversion_rate']} />
  </form>`;
}

export function CurrenciesPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(() => call('admin/currency/get_list', { page, per_page: 50 }), [page]);
  const fallback = useLoad(() => call('admin/currency/get_default'), [list.data]);
  const [deleting, setDeleting] = useState<string | null>(null);
  const { working, message, setMessage, error, act } = useRowActions();
  const defaultCode = fallback.data?.code ?? '';
  const makeDefault = (code: string): void =>
    act(`default-${code}`, async () => {
      await call('admin/currency/set_default', { code });
      setMessage(`${code} is now the default currency; the other rates are restated against it. Restart Tollgate (every process) so plan prices and usage amounts are read and shown in ${code}.`);
      list.reload();
    });
  const remove = (code: string): void =>
    act(`delete-${code}`, async () => {
      await call('admin/currency/delete', { code });
      setDeleting(null);
      setMessage(`${code} deleted.`);
      list.reload();
    });
  const columns: readonly Column<Currency>[] = [
    ['Code', (c) => html`<strong>${c.code}</strong>`],
    ['Name', (c) => c.name],
    ['Rate', (c) => (c.default ? html`1 <small>(default)</small>` : html`<${RateForm} key=${`${c.code}-${c.conversion_rate}`} currency=${c} onSaved=${() => list.reload()} />`)],
    ['Rate set', (c) => formatDateTime(c.rate_updated_at)],
    ['Decimals', (c) => c.minor_unit, 'num'],
    [
      'Actions',
      (c) =>
        c.default
          ? 'Default'
          : deleting === c.code
            ? html`<${Confirm} question=${`Delete ${c.code}? Its rate history is kept.`} confirmLabel="Delete" busy=${working === `delete-${c.code}`} onConfirm=${() => remove(c.code)} onCancel=${() => setDeleting(null)} />`
            : html`<div class="row">
                <${Button} label=${`Make default: ${c.code}`} busy=${working === `default-${c.code}`} onClick=${() => makeDefault(c.code)}>Make default<//>
                <${Button} label=${`Delete ${c.code}`} variant="danger" onClick=${() => setDeleting(c.code)}>Delete<//>
              </div>`,
    ],
  ];
  return html`<h1>Currencies</h1>
    <p>
      Prices are set in the default currency. Each other currency has a rate you set: how many of its units one unit of the default buys. Every rate
      you set is kept with the moment it was set.
    </p>
    <${AddCurrency} defaultCode=${defaultCode} onAdded=${(code: string) => {
      setMessage(`${code} added.`);
      list.reload();
    }} />
    <${ErrorMessage} error=${error} />
    <${ErrorMessage} error=${list.error} />
    <${Notice}>${message}<//>
    ${list.data
      ? html`<${DataTable} caption="Currencies" columns=${columns} rows=${list.data.list} busy=${list.loading} />`
      : list.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${list.data} onPage=${setPage} label="Currency pages" />`;
}
