// Nothing is lost when the sending process dies: 100 messages are queued, a real child process runs the outbox sender
// against a real SMTP server that takes its time, and is killed with SIGKILL in the middle of sending (some messages
// are then on the wire, claimed but not recorded as sent). A new process takes over once the claims' lease has run
// out. Afterwards every message has arrived and is recorded as sent; a message that arrived twice arrived with the
// same Message-ID both times. On SQLite (a database file both processes open) and, with TEST_DATABASE_URL, PostgreSQL.
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/platform/transaction.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { SenderProcesses } from '../helpers/sender-process.ts';
import { TestSmtp } from '../helpers/smtp.ts';

const COUNT = 100;
const LEASE_SECONDS = 2;

let t: TestApp;
const smtp = new TestSmtp();
const file = `/tmp/tollgate-crash-${process.pid}-${Date.now()}.db`;
const senders = new SenderProcesses(LEASE_SECONDS);

function startSender(): Promise<ChildProcess> {
  return senders.start(t, { SMTP_URL: smtp.url, MAIL_FROM: t.services.config.mailFrom });
}

beforeAll(async () => {
  await smtp.start();
  // The sender process opens the same database: a file on SQLite; on PostgreSQL the test database is shared anyway.
  t = await createTestApp({ SMTP_URL: smtp.url, ...(process.env.TEST_DATABASE_URL ? {} : { DATABASE_URL: `sqlite:${file}` }) });
}, 60_000);

afterAll(async () => {
  senders.killAll();
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

    // After 30 messages the server stops answering: the messages after them are on the wire when the kill comes.
    smtp.holdAfter = 30;
    const first = await startSender();
    await smtp.waitFor(31, 30_000);
    await senders.stop(first, 'SIGKILL');
    const atKill = await t.services.db.selectFrom('outbox_messages').select(['status', 'claim_token']).execute();
    const inFlight = atKill.filter((row) => row.status === 'pending' && row.claim_token !== null).length;
    const sentBeforeKill = atKill.filter((row) => row.status === 'sent').length;
    expect(sentBeforeKill).toBeLessThan(COUNT);
    // The interesting case happened: messages were claimed (being sent) when the process died.
    expect(inFlight).toBeGreaterThan(0);

    smtp.release();
    const second = await startSender();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const left = await t.services.db.selectFrom('outbox_messages').select('id').where('status', '!=', 'sent').execute();
      if (left.length === 0) break;
      if (Date.now() > deadline) throw new Error(`${left.length} messages were never sent`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await senders.stop(second, 'SIGTERM');

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
