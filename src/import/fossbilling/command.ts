// `npm run cli -- import fossbilling --from mysql://user:pass@host:port/db [--dry-run]`: reads the FOSSBilling
// database, plans the import against what Tollgate holds, then prints the plan (dry run) or applies it in one
// transaction and prints what it did. Errors leave Tollgate as it was.
import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { applyPlan } from './apply.ts';
import { buildPlan, readTollgateState } from './plan.ts';
import type { Plan } from './plan-types.ts';
import { planText, progressPrinter, type Out } from './report.ts';
import { connectSource, readSource } from './source.ts';

export interface ImportDeps {
  db: Kysely<Database>;
  secrets: Pick<SecretBox, 'hash' | 'encrypt'>;
  currency: string;
  invoicePrefix: string;
  counterDefault: number;
  out: Out;
}

export interface ImportOptions {
  from: string;
  dryRun: boolean;
}

/** `--from`, or FOSSBILLING_DATABASE_URL so the password stays out of the process list and the shell's history. */
export function parseImportArgs(args: string[], env: NodeJS.ProcessEnv = process.env): ImportOptions {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { from: { type: 'string' }, 'dry-run': { type: 'boolean', default: false } } });
  if (positionals[0] !== 'fossbilling' || positionals.length !== 1) throw new Error('Usage: npm run cli -- import fossbilling --from mysql://user:pass@host:port/db [--dry-run]');
  const from = values.from ?? env.FOSSBILLING_DATABASE_URL;
  if (from === undefined || !/^(mysql|mariadb):\/\//.test(from)) {
    throw new Error('import fossbilling needs --from mysql://user:pass@host:port/database (or FOSSBILLING_DATABASE_URL)');
  }
  return { from: from.replace(/^mariadb:/, 'mysql:'), dryRun: values['dry-run'] };
}

/** Runs the import (or its dry run) and returns the plan it followed. */
export async function importFossbilling(options: ImportOptions, deps: ImportDeps): Promise<Plan> {
  const source = await connectSource(options.from);
  let plan: Plan;
  try {
    deps.out.write('Reading the FOSSBilling database…\n');
    const data = await readSource(source);
    const state = await readTollgateState(deps.db, deps.currency, deps.invoicePrefix);
    plan = buildPlan(data, state, (json) => deps.secrets.hash(`fossbilling:${json}`), (key) => deps.secrets.hash(key));
  } finally {
    await source.end();
  }
  if (!options.dryRun) await applyPlan(plan, { db: deps.db, secrets: deps.secrets, progress: progressPrinter(deps.out), counterDefault: deps.counterDefault });
  deps.out.write(planText(plan, options.dryRun));
  return plan;
}
