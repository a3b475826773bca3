// The One-Stop-Shop report as CSV (issue 26 item 3): GET /api/admin/export/oss_report.csv?quarter=2026-Q4, the lines
// of admin/invoice/oss_report. The quarter is checked before anything is sent (422 naming it); the report is small
// (one line per country, rate and currency), so it is read whole.
import { parseQuarter, type OssReports } from '../invoice/oss-report.ts';
import { csvLine } from './csv.ts';

const HEADER = ['quarter', 'country', 'rate', 'currency', 'net', 'vat', 'invoices', 'credit_notes'];

export function ossReportCsv(reports: Pick<OssReports, 'forQuarter'>, params: Record<string, unknown>): AsyncGenerator<string> {
  const quarter = parseQuarter(params.quarter).label;
  return (async function* rows() {
    yield csvLine(HEADER);
    const report = await reports.forQuarter(quarter);
    for (const line of report.lines) yield csvLine([report.quarter, line.country, line.rate, line.currency, line.net, line.vat, line.invoices, line.credit_notes]);
  })();
}
