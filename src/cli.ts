// Operator commands:
//   npm run cli -- migrate
//   npm run cron                 (the scheduled jobs once: renewal invoices, suspensions, cancellations, stored provider events)
//   npm run cli -- create-admin --email a@b.c --password 'Secret123' [--name 'Ann']
//   npm run cli -- backup <file>  (a consistent copy of the SQLite database, while the server runs)
//   npm run cli -- import fossbilling --from mysql://user:pass@host:port/db [--dry-run]  (docs/moving-from-fossbilling.md)
import { parseArgs } from 'node:util';
import { bootstrap } from './bootstrap.ts';
import { backupSqlite } from './db/backup.ts';
import { importFossbilling, parseImportArgs } from './import/fossbilling/command.ts';
import { ADMINISTRATORS_GROUP_ID } from './modules/staff/service.ts';
import { ApiError } from './platform/errors.ts';
import type { Services } from './services.ts';

type Command = (services: Services, args: string[]) => Promise<void>;

const commands: Record<string, Command> = {
  async migrate() {
    process.stdout.write('Database is at the latest migration.\n');
  },
  async cron(services) {
    const report = await services.cron.run(new Date());
    // Provider events stored but not applied (the server applies them at start and every minute).
    const events_applied = await services.inboundEvents.processPending();
    process.stdout.write(`${JSON.stringify({ ...report, events_applied })}\n`);
  },
  async backup(services, args) {
    const [target] = args;
    if (target === undefined || target.startsWith('-')) throw new Error('backup needs a file name: npm run cli -- backup <file>');
    const { file, pages } = await backupSqlite(services.config.databaseUrl, target);
    process.stdout.write(`Wrote ${file} (${pages} pages)\n`);
  },
  async import(services, args) {
    const options = parseImportArgs(args);
    await services.settings.preload();
    await importFossbilling(options, {
      db: services.db,
      secrets: services.secrets,
      currency: services.config.currency,
      invoicePrefix: services.settings.peek('invoice_prefix') ?? 'INV-',
      counterDefault: Number(services.config.settings.invoice_next_number ?? '1'),
      out: process.stdout,
    });
  },
  async 'create-admin'(services, args) {
    const { values } = parseArgs({
      args,
      options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' } },
    });
    if (values.email === undefined || values.password === undefined) {
      throw new Error('create-admin needs --email and --password');
    }
    const created = await services.staff.create({
      email: values.email,
      password: values.password,
      name: values.name ?? 'Administrator',
      admin_group_id: ADMINISTRATORS_GROUP_ID,
    });
    process.stdout.write(`${created.apiToken}\n`);
  },
};

export function registerCommand(name: string, command: Command): void {
  commands[name] = command;
}

const [name = 'help', ...rest] = process.argv.slice(2);
const command = commands[name];
if (command === undefined) {
  process.stderr.write(`Usage: npm run cli -- <${Object.keys(commands).join('|')}> [options]\n`);
  process.exit(name === 'help' ? 0 : 2);
}
const services = await bootstrap();
try {
  await command(services, rest);
} catch (error) {
  process.stderr.write(`${error instanceof ApiError || error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await services.close();
}
