// A client's VAT number as VIES sees it, for staff (issue 26): the stored result and "Check with VIES now".
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { announce, Button, ErrorMessage, useAction, useLoad } from '../lib/ui.ts';
import { VatStatusList } from '../lib/vat-status.ts';

export function ClientVat({ clientId, vatNumber }: { clientId: number; vatNumber: string | null }) {
  const check = useLoad(() => call('admin/client/vat_status', { id: clientId }), [clientId, vatNumber]);
  const recheck = useAction();
  const run = (): void => {
    void recheck.run(async () => {
      const result = await call('admin/client/vat_check', { id: clientId });
      announce(result.status === 'pending' ? 'VIES did not answer; the check is retried later.' : 'VAT number checked.');
      check.reload();
    });
  };
  const checkable = check.data !== undefined && check.data.status !== 'none' && check.data.status !== 'not_applicable';
  return html`<section class="card" aria-labelledby="client-vat">
    <h2 id="client-vat">VAT number</h2>
    <${ErrorMessage} error=${check.error ?? recheck.error} />
    ${check.data !== undefined ? html`<${VatStatusList} check=${check.data} />` : null}
    ${checkable ? html`<div class="actions"><${Button} busy=${recheck.busy} onClick=${run}>Check with VIES now<//></div>` : null}
  </section>`;
}
