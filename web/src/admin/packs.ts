// Top-up packs (issue 24): staff offer fixed top-ups with an optional bonus of promotional credit; clients see the
// enabled ones on their Wallet page. Create, switch on and off, delete; invoices already issued keep the pack as it was.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, type Result } from '../lib/api.ts';
import { formatMoney } from '../lib/format.ts';
import { announce, Button, Confirm, ErrorMessage, Field, FormError, Loading, useAction, useLoad } from '../lib/ui.ts';
import { DataTable, filled } from './common.ts';

type Pack = Result<'admin/credit/pack_get_list'>['list'][number];

const EMPTY = { title: '', amount: '', bonus: '', bonus_days: '' };

export function PacksPage() {
  const packs = useLoad(() => call('admin/credit/pack_get_list'), []);
  const [form, setForm] = useState(EMPTY);
  const [deleting, setDeleting] = useState<Pack | null>(null);
  const create = useAction();
  const change = useAction();
  const set = (name: keyof typeof EMPTY) => (value: string) => setForm({ ...form, [name]: value });
  const submit = (event: Event): void => {
    event.preventDefault();
    void create.run(async () => {
      const days = form.bonus_days.trim();
      // Empty fields are left out: the server names a missing one (422) and the form shows it under its field.
      await call('admin/credit/pack_create', {
        ...(filled({ title: form.title, amount: form.amount.trim(), bonus: form.bonus.trim() }) as { title: string; amount: string }),
        ...(days !== '' && { bonus_days: Number(days) }),
      });
      setForm(EMPTY);
      announce('Pack created');
      packs.reload();
    });
  };
  const toggle = (pack: Pack): void => {
    void change.run(async () => {
      await call('admin/credit/pack_update', { id: pack.id, enabled: !pack.enabled });
      packs.reload();
    });
  };
  const remove = (pack: Pack): void => {
    void change.run(async () => {
      await call('admin/credit/pack_delete', { id: pack.id });
      setDeleting(null);
      announce(`Pack ${pack.title} deleted`);
      packs.reload();
    });
  };
  return html`<h1>Top-up packs</h1>
    <p>Clients see the enabled packs on their Wallet page. The amount is credited as paid credit when the invoice is paid; the bonus beside it as promotional credit, spent first, expiring after the days given (never when empty).</p>
    <form class="card" onSubmit=${submit} aria-labelledby="new-pack">
      <h2 id="new-pack">New pack</h2>
      <div class="row">
        <${Field} label="Title" name="title" required value=${form.title} onInput=${set('title')} error=${create.error} />
        <${Field} label="Price (credited)" name="amount" required inputmode="decimal" value=${form.amount} onInput=${set('amount')} error=${create.error} />
        <${Field} label="Bonus (blank = none)" name="bonus" inputmode="decimal" value=${form.bonus} onInput=${set('bonus')} error=${create.error} />
        <${Field} label="Bonus valid for days (blank = forever)" name="bonus_days" inputmode="numeric" value=${form.bonus_days} onInput=${set('bonus_days')} error=${create.error} />
      </div>
      <${FormError} error=${create.error} fields=${Object.keys(EMPTY)} />
      <${Button} type="submit" variant="primary" busy=${create.busy}>Create pack<//>
    </form>
    <${ErrorMessage} error=${packs.error ?? change.error} />
    ${deleting !== null
      ? html`<${Confirm} question=${`Delete the pack ${deleting.title}? Invoices already issued for it keep their bonus.`} confirmLabel="Delete" busy=${change.busy} onConfirm=${() => remove(deleting)} onCancel=${() => setDeleting(null)} />`
      : null}
    ${packs.data === undefined
      ? html`<${Loading} />`
      : html`<${DataTable}
          caption="Top-up packs"
          busy=${packs.loading}
          rows=${packs.data.list}
          columns=${[
            ['Title', (pack: Pack) => pack.title],
            ['Price', (pack: Pack) => formatMoney(pack.amount, pack.currency), 'num'],
            ['Bonus', (pack: Pack) => (Number(pack.bonus) > 0 ? formatMoney(pack.bonus, pack.currency) : '—'), 'num'],
            ['Bonus expires', (pack: Pack) => (pack.bonus_days === null ? (Number(pack.bonus) > 0 ? 'Never' : '') : `After ${pack.bonus_days} days`)],
            ['Offered', (pack: Pack) => html`<${Button} onClick=${() => toggle(pack)} label=${`${pack.enabled ? 'Disable' : 'Enable'} pack ${pack.title}`}>${pack.enabled ? 'Disable' : 'Enable'}<//>`],
            ['Remove', (pack: Pack) => html`<${Button} variant="danger" onClick=${() => setDeleting(pack)} label=${`Delete pack ${pack.title}`}>Delete<//>`],
          ]}
        />`}`;
}
