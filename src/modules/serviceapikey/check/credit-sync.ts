// Keeps the prepaid orders' credit views (credit-state.ts) current: re-read after a draw here (usage/prepaid-draw.ts
// calls `drawn`), when another process says it drew (`c<client id>` on the key invalidation channel), and in the
// background every CREDIT_REFRESH_MS while the order's keys are checked. One read at a time per order; a change heard
// during a read reads once more when it ends, so the last change is always seen. Also where the first NO_CREDIT refusal
// of a depletion is told (the verifiers' events stream, the `wallet.depleted` webhook: services.ts wires them).
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { KeySync } from '../sync/key-sync.ts';
import type { UsageTotals } from '../usage/totals.ts';
import type { OrderUsage } from './cache.ts';
import type { CreditView, OrderCredit } from './credit-state.ts';
import { applyView, CREDIT_REFRESH_MS, projectedBalance, projectedWallet } from './credit-state.ts';

/** The client's balance and what the order's meters drew in the period (modules/credit/prepaid.ts `view`). */
export type CreditViewReader = (clientId: number, orderId: number, periodStart: string) => Promise<CreditView>;

export interface CreditSyncDeps {
  db: Kysely<Database>;
  orderUsage: (orderId: number) => OrderUsage | undefined;
  totals: Pick<UsageTotals, 'periodTotal' | 'unflushedOf'>;
  readView: CreditViewReader;
  sync: Pick<KeySync, 'creditChanged' | 'onCreditChanged'>;
  /** Flushes this process's uses now (their draw follows, and the other processes hear of it). */
  drawNow: () => void;
  /**
   * The first NO_CREDIT refusal of a depletion in this process, with the balance it saw in minor units of the wallet's
   * currency (announce it; record it once).
   */
  onDepleted: (orderId: number, clientId: number, balance: number) => void;
  log: (error: unknown, what: string) => void;
  closed: () => boolean;
}

export function createCreditSync(deps: CreditSyncDeps) {
  const { db, totals, log } = deps;
  /** Client id → the prepaid orders of that client whose keys this process holds (bounded by the records held). */
  const byClient = new Map<number, Set<number>>();

  async function readLoop(orderId: number, usage: OrderUsage): Promise<void> {
    const credit = usage.credit!;
    try {
      do {
        credit.again = false;
        const bucket = usage.bucket;
        const view = await deps.readView(credit.clientId, orderId, usage.period.start);
        // The uses are read after what calls drew, so they are never fewer than the uses that draw priced.
        const used = (await totals.periodTotal(db, usage.keyIds, usage.period.start)) + totals.unflushedOf(usage.keyIds, bucket);
        // The period ended while reading: read the new one's.
        if (usage.bucket !== bucket) {
          credit.again = true;
          continue;
        }
        usage.used = used;
        usage.usedAt = Date.now();
        applyView(credit, view, used, Date.now());
      } while (credit.again && !deps.closed());
    } catch (error) {
      log(error, 'credit refresh');
    }
  }

  /** Re-reads the order's credit view; resolves when applied (or failed, logged). */
  function refresh(orderId: number, usage: OrderUsage): Promise<void> {
    const credit = usage.credit;
    if (credit === null) return Promise.resolve();
    if (credit.reading !== null) {
      credit.again = true;
      return credit.reading;
    }
    if (deps.closed()) return Promise.resolve();
    credit.reading = readLoop(orderId, usage).finally(() => {
      credit.reading = null;
    });
    return credit.reading;
  }

  /** The client's balance changed: re-read the views of its orders held here. */
  function clientChanged(clientId: number): Promise<void> {
    const orders = byClient.get(clientId);
    if (orders === undefined) return Promise.resolve();
    const reads: Array<Promise<void>> = [];
    for (const orderId of orders) {
      const usage = deps.orderUsage(orderId);
      // The order's records were dropped from this process: forget it until one is loaded again.
      if (usage?.credit == null) orders.delete(orderId);
      else reads.push(refresh(orderId, usage));
    }
    if (orders.size === 0) byClient.delete(clientId);
    return Promise.all(reads).then(() => undefined);
  }

  deps.sync.onCreditChanged((clientId) => void clientChanged(clientId));

  return {
    refresh,
    clientChanged,

    /** A prepaid order's record was loaded: its client's balance changes reach it. */
    track(orderId: number, clientId: number): void {
      let orders = byClient.get(clientId);
      if (orders === undefined) {
        // Bounded like the records: a dropped index only delays a view to its next background read.
        if (byClient.size >= 100_000) byClient.clear();
        orders = new Set();
        byClient.set(clientId, orders);
      }
      orders.add(orderId);
    },

    /** This process drew from the client's balance: re-read here, and tell the other processes. */
    async drawn(clientId: number): Promise<void> {
      deps.sync.creditChanged([clientId]);
      await clientChanged(clientId);
    },

    /** A check's fallback: re-reads in the background when the view is older than CREDIT_REFRESH_MS. */
    keepFresh(orderId: number, usage: OrderUsage, now: number): void {
      const credit = usage.credit;
      if (credit !== null && credit.reading === null && now - credit.readAt > CREDIT_REFRESH_MS) void refresh(orderId, usage);
    },

    /** This process spent half of what its view had above the floor: flush and draw now, once until the next view. */
    halfSpent(credit: OrderCredit): void {
      credit.drawAt = Number.POSITIVE_INFINITY;
      deps.drawNow();
    },

    /** The check refused the order's keys for NO_CREDIT: told once per depletion in this process (and drawn at once). */
    refused(orderId: number, usage: OrderUsage): void {
      const credit = usage.credit;
      if (credit === null || credit.depleted) return;
      credit.depleted = true;
      deps.drawNow();
      // In the wallet's currency, as get_info shows it (the default's only without a wallet view: then they are one).
      deps.onDepleted(orderId, credit.clientId, projectedWallet(credit, usage.used)?.balance ?? projectedBalance(credit, usage.used));
    },
  };
}

export type CreditSync = ReturnType<typeof createCreditSync>;
