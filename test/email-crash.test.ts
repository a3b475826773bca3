// Nothing is lost when the sending process dies: 100 messages are queued, a real child process runs the outbox sender
// against a real SMTP server that takes its time, and is killed with SIGKILL in the middle of sending (some messages
// are then on the wire, claimed but not recorded as sent). A new process takes over once the claims' lease has run
// out. Afterwards every message has arrived and is recorded as sent; a message that arrived twice arrived with the
// same Message-ID both times. On SQLite (a database file both processes open) and, with TEST_DATABASE_URL, PostgreSQL.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../src/db/transaction.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { TestSmtp } from './helpers/smtp.ts';

const COUNT = 100;
const LEASE_SECONDS = 2;

let t: TestApp;
const smtp = new TestSmtp();
const file = `/tmp/tollgate-crash-${process.pid}-${Date.now()}.db`;
const children: ChildProcess[] = [];

function startSender(): Promise<ChildProcess> {
  const config = t.services.config;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: config.databaseUrl,
    TOLLGATE_SECRET: config.secret ?? '',
    REDIS_URL: config.redisUrl ?? '',
    RATE_LIMIT_REDIS_PREFIX: config.rateLimit.redisPrefix,
    SMTP_URL: smtp.url,
    MAIL_FROM: config.mailFrom,
    PUBLIC_URL: config.publicUrl,
    OUTBOX_POLL_MS: '100',
    OUTBOX_LEASE_SECONDS: String(LEASE_SECONDS),
    SCHEDULER: 'off',
    LOG_LEVEL: 'warn',
    DATA_DIR: '/tmp/tollgate-test',
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/outbox-sender.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the sender did not start within 30 s')), 30_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'sending') {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the sender exited early (${code ?? signal})`));
    });
  });
}

beforeAll(async () => {
  await smtp.start();
  // The sender process opens the same database: a file on SQLite; on PostgreSQL the test database is shared anyway.
  t = await createTestApp({ SMTP_URL: smtp.url, ...(process.env.TEST_DATABASE_URL ? {} : { DATABASE_URL: `sqlite:${file}` }) });
}, 60_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await t?.close();
  await smtp.stop();
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
});

describe('a sender killed in the middle of sending', () => {
  it('loses nothing: after a restart every message arrives, and a repeated one keeps its Message-ID', async () => {
    const clientId = (await t.createClient()).id;
    const ids = await inTransaction(t.services.db, async (trx) => {
      const out: number[] = [];
      for (let n = 0; n < COUNT; n++) {
        out.push(
          await t.services.mail.queue(trx, {
            template: 'order_suspended',
            to: { email: `crash${n}@example.com`, name: `Recipient ${n}` },
            clientId,
            vars: { order_title: `Order ${n}`, reason: 'Testing', order_url: 'https://billing.example.com/orders' },
          }),
        );
      }
      return out;
    });
    expect(ids).toHaveLength(COUNT);

    // Each message takes the server 60 ms to accept: the kill finds some on the wire.
    smtp.acceptDelayMs = 60;
    const first = await startSender();
    await smtp.waitFor(30, 30_000);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const atKill = await t.services.db.selectFrom('outbox_messages').select(['status', 'claim_token']).execute();
    const inFlight = atKill.filter((row) => row.status === 'pending' && row.claim_token !== null).length;
    const sentBeforeKill = atKill.filter((row) => row.status === 'sent').length;
    expect(sentBeforeKill).toBeLessThan(COUNT);
    // The interesting case happened: messages were claimed (being sent) when the process died.
    expect(inFlight).toBeGreaterThan(0);

    const second = await startSender();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const left = await t.services.db.selectFrom('outbox_messages').select('id').where('status', '!=', 'sent').execute();
      if (left.length === 0) break;
      if (Date.now() > deadline) throw new Error(`${left.length} messages were never sent`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    second.kill('SIGTERM');
    await new Promise((resolve) => second.once('exit', resolve));

    const rows = await t.services.db.selectFrom('emails').select(['id', 'to_email', 'message_id']).where('client_id', '=', clientId).execute();
    const byMessageId = new Map(rows.map((row) => [row.message_id, row]));
    expect(byMessageId.size).toBe(COUNT);
    // Every copy that arrived belongs to a queued message and went to that message's recipient.
    for (const mail of smtp.received) {
      const row = byMessageId.get(mail.parsed.messageId ?? '');
      expect(row, `unknown Message-ID ${mail.parsed.messageId}`).toBeDefined();
      expect(mail.envelope.to).toEqual([row!.to_email]);
    }
    // Every message arrived; the ones caught mid-send may have arrived twice, never under another Message-ID.
    const arrived = new Set(smtp.received.map((mail) => mail.parsed.messageId));
    expect(arrived.size).toBe(COUNT);
    const perRecipient = new Map<string, Set<string>>();
    for (const mail of smtp.received) {
      const to = mail.envelope.to[0]!;
      perRecipient.set(to, (perRecipient.get(to) ?? new Set()).add(mail.parsed.messageId ?? ''));
    }
    expect([...perRecipient.values()].every((set) => set.size === 1)).toBe(true);
    const duplicates = smtp.received.length - COUNT;
    expect(duplicates).toBeLessThanOrEqual(inFlight);
    process.stdout.write(`crash test: ${sentBeforeKill} sent before the kill, ${inFlight} in flight, ${duplicates} delivered twice (same Message-ID)\n`);
  }, 120_000);
});
