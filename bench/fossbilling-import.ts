// Measures the FOSSBilling import as operators run it: a MariaDB started here holds a fixture of N clients (default
// 10,000), each with an API-key order and its key and M invoices (default 5, so 50,000), one line or two each, and a
// payment per paid invoice; then `npm run cli -- import fossbilling` runs in its own process against a fresh SQLite
// file (or the database in IMPORT_DATABASE_URL), first as a dry run, then for real, then again (nothing to change).
// Run: `npx tsx bench/fossbilling-import.ts [clients] [invoicesPerClient]`. Prints seconds and records per second.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFixture } from '../test/import/fixture.ts';
import { startMariaDb } from '../test/import/mariadb.ts';

const clients = Number(process.argv[2] ?? 10_000);
const perClient = Number(process.argv[3] ?? 5);
const dir = await mkdtemp(join(tmpdir(), 'tollgate-fb-bench-'));
const maria = await startMariaDb();

function cli(args: string[]): Promise<{ seconds: number; output: string }> {
  const started = process.hrtime.bigint();
  const env = { ...process.env, DATABASE_URL: process.env.IMPORT_DATABASE_URL ?? `sqlite:${dir}/tollgate.db`, DATA_DIR: dir, CURRENCY: 'USD', SCHEDULER: 'off' };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`cli exited with ${code}\n${output}`));
      else resolve({ seconds: Number(process.hrtime.bigint() - started) / 1e9, output });
    });
  });
}

try {
  const admin = await maria.connect();
  const built = Date.now();
  await buildFixture(admin, 'fb', { clients, invoicesPerClient: perClient, sharedHash: true });
  await admin.end();
  process.stdout.write(`fixture: ${clients} clients, ${clients * perClient} invoices in ${((Date.now() - built) / 1000).toFixed(1)} s\n`);
  // Start-up (migrations, loading the code) measured alone, to be taken off the import's time.
  const startup = await cli(['migrate']);
  const from = maria.url('fb');
  const dry = await cli(['import', 'fossbilling', '--from', from, '--dry-run']);
  const real = await cli(['import', 'fossbilling', '--from', from]);
  const again = await cli(['import', 'fossbilling', '--from', from]);
  // Records written: every row created (items and mapping rows not counted; they ride with their invoice / record).
  const created = [...real.output.matchAll(/^\s{2}[a-zA-Z ]+?\s+(\d+) new/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
  const rate = (seconds: number): string => `${Math.round(created / Math.max(0.001, seconds - startup.seconds))} records/s`;
  process.stdout.write(real.output.split('\nPer record:')[0]!.concat('\n'));
  process.stdout.write(`start-up alone ${startup.seconds.toFixed(1)} s\n`);
  process.stdout.write(`dry run   ${dry.seconds.toFixed(1)} s  (${rate(dry.seconds)} planned)\n`);
  process.stdout.write(`import    ${real.seconds.toFixed(1)} s  (${created} records, ${rate(real.seconds)})\n`);
  process.stdout.write(`re-run    ${again.seconds.toFixed(1)} s  (nothing changed)\n`);
} finally {
  await maria.stop();
  await rm(dir, { recursive: true, force: true });
}
