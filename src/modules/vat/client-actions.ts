// A client's VAT number as VIES sees it (issue 26 item 1): staff read the stored result on the client page
// (admin/client/vat_status) and re-check it now (admin/client/vat_check); the client reads its own
// (client/profile/vat_status).
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import type { VatChecks } from './checks.ts';
import { VatCheck } from './results.ts';

export interface VatClientNeeds {
  vatChecks: Pick<VatChecks, 'get' | 'checkNow'>;
}

const { adminAction, clientAction } = actionsFor<VatClientNeeds>();
const ById = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) });

export const vatClientAdminActions = {
  vat_status: adminAction({
    params: ById,
    permission: 'client.view',
    summary: "What VIES last said of the client's VAT number (status, consultation number, date, name and address)",
    result: VatCheck,
    handler: ({ id }, { services }) => services.vatChecks.get(id),
  }),
  vat_check: adminAction({
    params: ById,
    permission: 'client.manage',
    summary: "Checks the client's EU VAT number with VIES now and answers the stored result; VIES down → status pending, retried later; 409 without an EU number",
    result: VatCheck,
    // A VIES call (seconds when it is slow): not held in the action's transaction; the entry is written after it.
    audit: 'after',
    handler: ({ id }, { services }) => services.vatChecks.checkNow(id),
  }),
};

export const vatProfileClientActions = {
  vat_status: clientAction({
    params: Type.Object({}),
    summary: 'Whether VIES confirmed your VAT number: a valid number makes EU sales from another member state reverse-charged (0%)',
    result: VatCheck,
    handler: (_params, { services, identity }) => services.vatChecks.get(identity.client.id),
  }),
};
