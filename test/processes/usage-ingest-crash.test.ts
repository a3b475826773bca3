// Exactly once across processes and crashes (issue 23, "Bad input and safety"): real Tollgate processes
// (test/processes/apikey-peer.ts, talked to over real sockets) share one PostgreSQL database and Redis.
// 1. The same 10,000 events go through two processes at once, split into different batches (in order by 100 on one;
//    shuffled, in batches of 37 to 999, on the other), several batches in flight on each: every event is accepted
//    once, and reported a duplicate once.
// 2. 10,000 more events go through the first in batches of 250; it is killed with SIGKILL while one of its ingest
//    transactions is open (seen in pg_stat_activity while the process is stopped), and every batch it did not answer
//    is sent again through the other, split differently. Then all 10,000 once more: none is new.
// 3. The same with a restarted process, killed once a batch it was sent is committed but not yet answered: the case
//    of a sender retrying a batch that was in fact stored.
// Afterwards each order holds each of its events once: row counts and sums of values per order equal the events'.
// Runs only where TEST_DATABASE_URL is set, as the other two-process tests; with TEST_REDIS_URL the processes share it.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';
const REDIS = process.env.TEST_REDIS_URL ?? '';
const EVENTS = 10_000;
const ORDERS = 5;
/** Batches in flight on each process at once. */
const IN_FLIGHT = 4;

interface Event {
  id: string;
  key?: string;
  order_id?: number;
  meter: string;
  value: number;
}

type Batch = Array<Event & { orderId: number }>;

interface Progress {
  answered: number;
  /** Indexes of the batches sent and not yet answered. */
  inFlight: Set<number>;
  /** Every batch has been sent and has its answer or its failure. */
  done: boolean;
}

const newProgress = (): Progress => ({ answered: 0, inFlight: new Set(), done: false });

interface Answer {
  accepted: number;
  duplicates: number;
  rejected: unknown[];
}

/** Events `<prefix>0…`, spread over the orders, half named by key and half by order id; whole-number values. */
function eventsOf(prefix: string, orders: ReadonlyArray<{ orderId: number; key: string }>): Array<Event & { orderId: number }> {
  return Array.from({ length: EVENTS }, (_, i) => {
    const order = orders[i % orders.length]!;
    const target = i % 2 === 0 ? { key: order.key } : { order_id: order.orderId };
    return { id: `${prefix}${i}`, ...target, meter: 'tokens', value: 1 + ((i * 7919) % 1000), orderId: order.orderId };
  });
}

/** The events in a fixed shuffled order (a seeded Fisher–Yates), so a failure can be replayed. */
function shuffled<T>(items: readonly T[], seed = 23): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Cuts `events` into batches whose sizes cycle through `sizes`. */
function split<T>(events: readonly T[], sizes: readonly number[]): T[][] {
  const batches: T[][] = [];
  for (let at = 0, n = 0; at < events.length; n++) {
    const size = sizes[n % sizes.length]!;
    batches.push(events.slice(at, at + size));
    at += size;
  }
  return batches;
}

/** The wire form of an event: what a sender knows (not the order id this test keeps beside a key). */
const wire = ({ orderId: _orderId, ...event }: Event & { orderId: number }): Event => event;

describe.runIf(PG !== '')('usage ingestion exactly once across two processes and a kill -9 (PostgreSQL)', () => {
  let t: TestApp;
  let first: Peer;
  let second: Peer;
  let orders: Array<{ orderId: number; key: string }>;

  beforeAll(async () => {
    t = await createTestApp();
    [first, second] = await Promise.all([startPeer(t, REDIS !== ''), startPeer(t, REDIS !== '')]);
    const plan = await createPlan(t, { meters: [{ code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' }] });
    const clientId = (await t.createClient()).id;
    orders = [];
    for (let n = 0; n < ORDERS; n++) orders.push(await buyKey(t, plan, clientId));
  }, 120_000);
  afterAll(async () => {
    if (first?.child.exitCode === null) first.child.kill('SIGKILL');
    await second?.stop();
    await t?.close();
  });

  /** One batch through `peer`; throws when the process does not answer (killed) or answers an error. */
  async function send(peer: Peer, batch: Batch): Promise<Answer> {
    const response = await fetch(`${peer.url}/api/admin/usage/ingest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` },
      body: JSON.stringify({ events: batch.map(wire) }),
    });
    const body = (await response.json()) as { result: Answer; error: unknown };
    if (response.status !== 200 || body.error !== null) throw new Error(`ingest answered ${response.status}: ${JSON.stringify(body.error)}`);
    return body.result;
  }

  /**
   * Sends `batches` through `peer`, IN_FLIGHT at a time; each batch's answer, or null where it got none. `progress`
   * (when given) is kept up to date: how many were answered, and which are sent and not yet answered.
   */
  async function sendAll(peer: Peer, batches: Batch[], progress: Progress = newProgress()): Promise<Array<Answer | null>> {
    const answers: Array<Answer | null> = batches.map(() => null);
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < batches.length) {
        const index = next++;
        progress.inFlight.add(index);
        try {
          answers[index] = await send(peer, batches[index]!);
          progress.answered++;
        } catch {
          answers[index] = null;
        } finally {
          progress.inFlight.delete(index);
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
    progress.done = true;
    return answers;
  }

  /**
   * Kills `peer` with SIGKILL at a moment `caught` finds, while `batches` go through it: once a few batches are
   * through, the process is stopped (SIGSTOP), looked at, and killed there or let go on for a moment. Returns whether
   * it was caught, the batches' answers, and the ones it never answered.
   */
  async function killWhile(peer: Peer, batches: Batch[], caught: (progress: Readonly<Progress>) => Promise<boolean>) {
    const progress = newProgress();
    let killed = false;
    const killer = (async () => {
      while (progress.answered < 3 && !progress.done) await new Promise((resolve) => setTimeout(resolve, 2));
      const pid = peer.child.pid!;
      while (!progress.done) {
        process.kill(pid, 'SIGSTOP');
        if (await caught(progress)) {
          process.kill(pid, 'SIGKILL');
          killed = true;
          return;
        }
        process.kill(pid, 'SIGCONT');
        await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 4));
      }
    })();
    const answers = await sendAll(peer, batches, progress);
    await killer;
    const lost = batches.filter((_, index) => answers[index] === null);
    return { killed, answers, lost };
  }

  const total = (answers: Array<Answer | null>, field: 'accepted' | 'duplicates'): number => answers.reduce((sum, answer) => sum + (answer?.[field] ?? 0), 0);

  /** Whether a backend other than ours holds an open transaction or is running an insert into usage_events. */
  async function ingestTransactionOpen(): Promise<boolean> {
    // count(*) is an int8: read as a number by the app's type parser, typed loosely here all the same.
    const found = await sql<{ n: number | string }>`
      select count(*) as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid()
        and (state like 'idle in transaction%' or (state = 'active' and query ilike 'insert into "usage_events"%'))`.execute(t.services.db);
    return Number(found.rows[0]?.n ?? 0) > 0;
  }

  it('stores each of 10,000 events once when both processes take them at once, in different splits', async () => {
    const events = eventsOf('a', orders);
    const [inOrder, mixed] = await Promise.all([sendAll(first, split(events, [100])), sendAll(second, split(shuffled(events), [37, 250, 999, 114]))]);
    expect(inOrder.every((answer) => answer !== null && answer.rejected.length === 0)).toBe(true);
    expect(mixed.every((answer) => answer !== null && answer.rejected.length === 0)).toBe(true);
    const answers = [...inOrder, ...mixed];
    expect(total(answers, 'accepted')).toBe(EVENTS);
    expect(total(answers, 'duplicates')).toBe(EVENTS);
  }, 60_000);

  /**
   * The unanswered batches sent again through the process left, cut differently: each of their events either was
   * stored by the killed process's committed transaction (a duplicate now) or is new now; never both, never neither.
   * Then every event once more: none is new. Returns how many of the resent were duplicates and how many new.
   */
  async function resendAndCheck(events: Batch, answers: Array<Answer | null>, lost: Batch[]): Promise<{ duplicates: number; accepted: number }> {
    expect(lost.length).toBeGreaterThan(0);
    expect(answers.every((answer) => answer === null || answer.rejected.length === 0)).toBe(true);
    const resent = await sendAll(second, split(lost.flat(), [70, 333]));
    expect(resent.every((answer) => answer !== null && answer.rejected.length === 0)).toBe(true);
    expect(total(resent, 'accepted') + total(resent, 'duplicates')).toBe(lost.flat().length);
    expect(total(answers, 'accepted') + total(resent, 'accepted')).toBeLessThanOrEqual(EVENTS);
    const again = await sendAll(second, split(events, [1000]));
    expect(total(again, 'accepted')).toBe(0);
    expect(total(again, 'duplicates')).toBe(EVENTS);
    return { duplicates: total(resent, 'duplicates'), accepted: total(resent, 'accepted') };
  }

  it('stores each event once when a process is killed with an ingest transaction open, and its batches go to the other', async () => {
    const events = eventsOf('b', orders);
    const batches = split(events, [250]);
    const { killed, answers, lost } = await killWhile(first, batches, ingestTransactionOpen);
    expect(killed).toBe(true);
    const resent = await resendAndCheck(events, answers, lost);
    process.stdout.write(
      `usage ingest crash test (transaction open): ${batches.length - lost.length} of ${batches.length} batches answered before the kill; of the ${lost.flat().length} events resent, ${resent.duplicates} had been stored by the killed process, ${resent.accepted} were new\n`,
    );
  }, 60_000);

  it('stores each event once when a restarted process is killed with a batch committed but not answered', async () => {
    const restarted = await startPeer(t, REDIS !== '');
    try {
      const events = eventsOf('c', orders);
      const batches = split(events, [250]);
      // Committed: its first row is visible to another connection; the process, stopped, has not answered it.
      const committedUnanswered = async (progress: Readonly<Progress>): Promise<boolean> => {
        const inFlight = [...progress.inFlight];
        if (inFlight.length === 0) return false;
        const stored = await t.services.db
          .selectFrom('usage_events')
          .select('event_id')
          .where('event_id', 'in', inFlight.map((index) => batches[index]![0]!.id))
          .execute();
        const storedIds = new Set(stored.map((row) => row.event_id));
        if (!inFlight.some((index) => storedIds.has(batches[index]![0]!.id))) return false;
        // Still unanswered a moment later: an answer the process wrote before it was stopped has reached this one by
        // then (the stopped process writes nothing more).
        await new Promise((resolve) => setTimeout(resolve, 20));
        return inFlight.some((index) => storedIds.has(batches[index]![0]!.id) && progress.inFlight.has(index));
      };
      const { killed, answers, lost } = await killWhile(restarted, batches, committedUnanswered);
      expect(killed).toBe(true);
      const resent = await resendAndCheck(events, answers, lost);
      // The batch caught committed and unanswered was resent: its events came back as duplicates.
      expect(resent.duplicates).toBeGreaterThan(0);
      process.stdout.write(
        `usage ingest crash test (committed, unanswered): ${batches.length - lost.length} of ${batches.length} batches answered before the kill; of the ${lost.flat().length} events resent, ${resent.duplicates} had been stored by the killed process, ${resent.accepted} were new\n`,
      );
    } finally {
      if (restarted.child.exitCode === null) restarted.child.kill('SIGKILL');
    }
  }, 150_000); // Starting a process under tsx alone can take tens of seconds on a busy machine (test/helpers/peer.ts).

  it('holds each event exactly once: rows and sums per order equal the events sent', async () => {
    const expected = new Map<number, { rows: number; sum: number }>();
    for (const event of ['a', 'b', 'c'].flatMap((prefix) => eventsOf(prefix, orders))) {
      const entry = expected.get(event.orderId) ?? { rows: 0, sum: 0 };
      entry.rows++;
      entry.sum += event.value;
      expected.set(event.orderId, entry);
    }
    const stored = await t.services.db
      .selectFrom('usage_events')
      .select((eb) => ['order_id', eb.fn.countAll<number | string>().as('rows'), eb.fn.sum<number | string>('value').as('sum'), eb.fn.count<number | string>('event_id').distinct().as('ids')])
      .groupBy('order_id')
      .orderBy('order_id')
      .execute();
    expect(stored.map((row) => ({ order: row.order_id, rows: Number(row.rows), ids: Number(row.ids), sum: Number(row.sum) }))).toEqual(
      [...expected].toSorted(([a], [b]) => a - b).map(([order, { rows, sum }]) => ({ order, rows, ids: rows, sum })),
    );
  });
});
