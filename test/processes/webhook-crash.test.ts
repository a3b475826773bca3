// Nothing is lost when the process sending webhooks dies: 100 deliveries are pending, a real child process runs the
// outbox sender against a real receiver that takes its time, and is SIGKILLed mid-sending (some deliveries are then
// on the wire, claimed but not recorded). A new process takes over once the claims' lease has run out. Afterwards
// every delivery has arrived (verified with standardwebhooks) and is recorded as delivered; one that arrived twice
// arrived with the same webhook-id both times, so receivers drop the repeat. On SQLite (a database file both
// processes open) and, with TEST_DATABASE_URL, PostgreSQL.
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { SenderProcesses } from '../helpers/sender-process.ts';
import { Receiver } from '../helpers/webhook-receiver.ts';

const COUNT = 100;
const LEASE_SECONDS = 2;

let t: TestApp;
const receiver = new Receiver();
const file = `/tmp/tollgate-webhook-crash-${process.pid}-${Date.now()}.db`;
const senders = new SenderProcesses(LEASE_SECONDS);

function startSender(): Promise<ChildProcess> {
  return senders.start(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  await receiver.start();
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', ...(process.env.TEST_DATABASE_URL ? {} : { DATABASE_URL: `sqlite:${file}` }) });
}, 60_000);

afterAll(async () => {
  senders.killAll();
  await t?.close();
  await receiver.stop();
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
});

describe('a webhook sender killed in the middle of sending', () => {
  it('loses nothing: after a restart every delivery arrives, a repeated one with the same webhook-id', async () => {
    const created = await t.admin('webhook/create', { url: receiver.url, events: ['client.created'] });
    receiver.secret = created.result.secret as string;
    for (let n = 0; n < COUNT; n++) await t.createClient();
    const queued = await t.services.db.selectFrom('webhook_deliveries').select('message_id').execute();
    expect(queued).toHaveLength(COUNT);

    // After 30 answers the receiver stops answering: the deliveries after them are on the wire when the kill comes.
    receiver.holdAfter = 30;
    const first = await startSender();
    await waitFor(() => receiver.received.length > 30, 30_000);
    await senders.stop(first, 'SIGKILL');
    const atKill = await t.services.db.selectFrom('outbox_messages').select(['status', 'claim_token']).where('kind', '=', 'webhook').execute();
    const inFlight = atKill.filter((row) => row.status === 'pending' && row.claim_token !== null).length;
    const sentBeforeKill = atKill.filter((row) => row.status === 'sent').length;
    expect(sentBeforeKill).toBeLessThan(COUNT);
    expect(inFlight).toBeGreaterThan(0);

    receiver.holdAfter = null;
    const second = await startSender();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const left = await t.services.db.selectFrom('outbox_messages').select('id').where('kind', '=', 'webhook').where('status', '!=', 'sent').execute();
      if (left.length === 0) break;
      if (Date.now() > deadline) throw new Error(`${left.length} deliveries were never made`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await senders.stop(second, 'SIGTERM');

    // Every delivery arrived, verified; nothing arrived that was not queued.
    expect(receiver.received.every((r) => r.verifyError === null)).toBe(true);
    const expected = new Set(queued.map((row) => row.message_id));
    const arrived = new Set(receiver.received.map((r) => r.id));
    expect(arrived).toEqual(expected);
    // A repeat carries the same id and the same body.
    const bodies = new Map<string, string>();
    for (const r of receiver.received) {
      if (bodies.has(r.id)) expect(r.body).toBe(bodies.get(r.id));
      bodies.set(r.id, r.body);
    }
    const duplicates = receiver.received.length - COUNT;
    expect(duplicates).toBeLessThanOrEqual(inFlight);
    const log = (await t.admin('webhook/delivery_get_list', { status: 'delivered', per_page: 100 })).result;
    expect(log.total).toBe(COUNT);
    process.stdout.write(`webhook crash test: ${sentBeforeKill} delivered before the kill, ${inFlight} in flight, ${duplicates} delivered twice (same webhook-id)\n`);
  }, 120_000);
});
