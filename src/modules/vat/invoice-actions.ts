// The EU VAT actions on the invoice URL module, beside the tax rules (issue 26): the member states' rates staff edit
// (admin/invoice/vat_rate_get_list, vat_rate_update) and the One-Stop-Shop report (admin/invoice/oss_report; its CSV is
// GET /api/admin/export/oss_report.csv?quarter=…).
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import { Done } from '../../platform/schemas.ts';
import type { OssReports } from '../invoice/oss-report.ts';
import type { VatRates } from './rates.ts';
import { OssReport, VatRate } from './results.ts';

export interface VatInvoiceNeeds {
  vatRates: Pick<VatRates, 'list' | 'update'>;
  ossReports: Pick<OssReports, 'forQuarter'>;
}

const { adminAction } = actionsFor<VatInvoiceNeeds>();

export const vatInvoiceAdminActions = {
  vat_rate_get_list: adminAction({
    params: Type.Object({}),
    permission: 'invoice.view',
    summary: "The EU member states' VAT rates the EU rules use (eu_vat on): shipped standard rates, as staff edited them",
    result: Type.Array(VatRate),
    handler: (_params, { services }) => services.vatRates.list(),
  }),
  vat_rate_update: adminAction({
    params: Type.Object({ country: Type.String({ minLength: 2, maxLength: 2 }), rate: Type.Union([Type.String({ maxLength: 16 }), Type.Number()]) }),
    permission: 'invoice.manage',
    summary: "Sets a member state's VAT rate (percent); invoices already issued keep theirs; 422 for a country outside the EU",
    result: Done,
    async handler({ country, rate }, { services }) {
      await services.vatRates.update(country, rate);
      return true;
    },
  }),
  oss_report: adminAction({
    params: Type.Object({ quarter: Type.String({ maxLength: 16 }) }),
    permission: 'invoice.view',
    summary:
      'One-Stop-Shop report of a quarter ("2026-Q4"): net and VAT per country, rate and currency of consumer sales to other EU countries, by payment date, less the credit notes of the quarter; 422 for a bad quarter',
    result: OssReport,
    handler: ({ quarter }, { services }) => services.ossReports.forQuarter(quarter),
  }),
};
