// Notices about an API key's validity, coalesced (issue 21 item 9): staff toggling a key thirty times sent the
// customer thirty-one mails. Now a switch (off, on again, a key deleted) does not queue a mail; it makes sure one
// delayed outbox item of the kind `key_validity_notice` is waiting for that key. The item is replaceable in effect:
// further switches while it waits add nothing, and when it runs it reads the key's state at that moment and mails
// only if that differs from what the customer was last told. Items for one key are at least an hour apart, so the
// customer gets at most one such mail per key per hour, carrying the latest state.
//
// What the customer was last told travels in the item (`told`: whether the key worked): the state just before the
// first switch after the previous item went. A key switched back on is not announced: there is no "key enabled"
// template (templates are shared with the operator's mail layout work), so only "disabled" is ever sent.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import type { OutboxService } from '../outbox/service.ts';
import '../serviceapikey/events.ts';

export const KEY_NOTICE_KIND = 'key_validity_notice';
/** How long a first switch waits before its notice goes: a key switched off and straight back on sends nothing. */
export const KEY_NOTICE_DELAY_MS = 60_000;
/** The least time between two notices about the same key. */
export const KEY_NOTICE_SPACING_MS = 3_600_000;
const RETRY_DELAYS_MS = [60_000, 5 * 60_000, 30 * 60_000];

interface KeyNotice {
  keyId: number;
  orderId: number;
  clientId: number;
  /** Whether the key worked when the customer was last told about it. */
  told: boolean;
}

export interface KeyNoticesDeps {
  db: Kysely<Database>;
  events: EventBus;
  outbox: Pick<OutboxService, 'enqueue' | 'registerKind' | 'latestWithKeyPrefix'>;
  /** Queues the "key disabled" mail in `trx`; `dedupeKey` makes a retried delivery queue it once. */
  sendDisabled: (trx: Kysely<Database>, notice: { orderId: number; clientId: number; dedupeKey: string }) => Promise<unknown>;
  /** Whether the key exists and is switched on now, asked of the key module (serviceapikey/key-state.ts). */
  keyIsSwitchedOn: (trx: Kysely<Database>, keyId: number) => Promise<boolean>;
}

function readNotice(payload: unknown): KeyNotice | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const { keyId, orderId, clientId, told } = payload as Record<string, unknown>;
  if (typeof keyId !== 'number' || typeof orderId !== 'number' || typeof clientId !== 'number' || typeof told !== 'boolean') return null;
  return { keyId, orderId, clientId, told };
}

export function registerKeyNotices({ db, events, outbox, sendDisabled, keyIsSwitchedOn }: KeyNoticesDeps): void {
  /** A switch of the key's validity, inside the switch's transaction: make sure a notice is waiting. */
  async function switched(trx: Kysely<Database>, event: { keyId: number; orderId: number; clientId: number }, workedBefore: boolean): Promise<void> {
    const prefix = `${KEY_NOTICE_KIND}:${event.keyId}:`;
    const latest = await outbox.latestWithKeyPrefix(trx, prefix);
    // One is waiting (and not being delivered right now): it will read the state this switch leaves.
    if (latest !== undefined && latest.status === 'pending' && !latest.claimed) return;
    const now = Date.now();
    const runAt = Math.max(now + KEY_NOTICE_DELAY_MS, latest === undefined ? 0 : Date.parse(latest.run_at) + KEY_NOTICE_SPACING_MS);
    const notice: KeyNotice = { keyId: event.keyId, orderId: event.orderId, clientId: event.clientId, told: workedBefore };
    await outbox.enqueue(trx, { kind: KEY_NOTICE_KIND, payload: notice, runAt: new Date(runAt), dedupeKey: `${prefix}${runAt}` });
  }

  events.on('apikey.disabled', (event, trx) => switched(trx, event, true));
  events.on('apikey.enabled', (event, trx) => switched(trx, event, false));

  outbox.registerKind(KEY_NOTICE_KIND, {
    retryDelaysMs: RETRY_DELAYS_MS,
    async deliver(payload, { id }) {
      const notice = readNotice(payload);
      if (notice === null) return;
      await inTransaction(db, async (trx) => {
        const works = await keyIsSwitchedOn(trx, notice.keyId);
        // Back where the customer last heard it (switched off and on again): nothing to say.
        if (works === notice.told || works) return;
        await sendDisabled(trx, { orderId: notice.orderId, clientId: notice.clientId, dedupeKey: `${KEY_NOTICE_KIND}:mail:${id}` });
      });
    },
  });
}
