// What the operator reads: progress per kind while the import runs (one line rewritten in place on a terminal, plain
// lines otherwise, e.g. in a log), and the per-kind counts and per-record problems of the plan.
import type { Plan, Planned } from './plan-types.ts';

export interface Out {
  write(text: string): void;
  isTTY?: boolean | undefined;
}

export function progressPrinter(out: Out): (kind: string, done: number, total: number) => void {
  return (kind, done, total) => {
    if (out.isTTY === true) out.write(`\r${kind}: ${done}/${total}${done === total ? '\n' : ''}`);
    else if (done === total) out.write(`${kind}: ${done}/${total}\n`);
  };
}

const LABELS: ReadonlyArray<readonly [keyof Plan, string]> = [
  ['staffGroups', 'staff groups'],
  ['staff', 'staff'],
  ['clients', 'clients'],
  ['taxes', 'tax rules'],
  ['products', 'products'],
  ['orders', 'orders'],
  ['keys', 'API keys'],
  ['invoices', 'invoices'],
  ['transactions', 'transactions'],
  ['balances', 'balances'],
];

export interface Counts { create: number; update: number; unchanged: number; skipped: number }

/** Per kind: records to create, to update, unchanged, skipped (problems whose outcome is `skipped`). */
export function countsOf(plan: Plan): Record<string, Counts> {
  const skippedKind: Record<string, string> = { staff: 'staff', client: 'clients', order: 'orders', apikey: 'keys', invoice: 'invoices', transaction: 'transactions', balance: 'balances' };
  const out: Record<string, Counts> = {};
  for (const [field, label] of LABELS) {
    const list = plan[field] as Array<Planned<unknown>>;
    out[label] = {
      create: list.filter((r) => r.action === 'create').length,
      update: list.filter((r) => r.action === 'update').length,
      unchanged: list.filter((r) => r.action === 'unchanged').length,
      skipped: plan.problems.filter((p) => p.outcome === 'skipped' && skippedKind[p.kind] === field).length,
    };
  }
  return out;
}

export function planText(plan: Plan, dryRun: boolean): string {
  const lines: string[] = [`Source: ${plan.version}, currency ${plan.currency}.`, dryRun ? 'Dry run: nothing was written. The import would:' : 'Imported:'];
  for (const [label, c] of Object.entries(countsOf(plan))) {
    lines.push(`  ${label.padEnd(14)} ${String(c.create).padStart(7)} new  ${String(c.update).padStart(7)} updated  ${String(c.unchanged).padStart(7)} unchanged  ${String(c.skipped).padStart(5)} skipped`);
  }
  lines.push(`  client groups  ${plan.clientGroups} not imported (Tollgate has no client groups)`);
  lines.push(`  balance total  ${plan.balanceTotal.clients} clients, ${plan.balanceTotal.total} ${plan.currency} in total (credit ledger entries)`);
  if (plan.problems.length > 0) {
    lines.push('', 'Per record:');
    for (const p of plan.problems) lines.push(`  ${p.kind}${p.fbId === null ? '' : ` ${p.fbId}`}: ${p.outcome}: ${p.message}`);
  }
  return `${lines.join('\n')}\n`;
}
