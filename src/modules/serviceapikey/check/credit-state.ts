// The prepaid side of the check (issue 24 item 2): each process holds, per prepaid order it has keys cached for, the
// client's balance and what the order's `calls` meter has drawn this usage period, and from them the number of uses at
// which the balance reaches the plan's floor (0, or −allow_negative): `stopAt`. The check refuses with NO_CREDIT once
// the order's uses reach it — an integer comparison, never a database or Redis round trip per check.
//
// The uses this process counts but has not yet flushed (and so not yet drawn) are priced in `stopAt`: the balance left
// above the floor buys that many more uses at the plan's calls price. The plan's other meters are drawn as their events
// are ingested (usage/prepaid-draw.ts), so the balance read after a draw already holds them.
//
// The view is re-read (balance, drawn, and the order's uses, together, so they agree)
// - after this process drew from the balance (a flush of uses, an ingested batch), and when another process says it
//   did (a `c<client id>` token on the key invalidation channel, sync/invalidation.ts);
// - in the background at most every CREDIT_REFRESH_MS while the order's keys are checked (a top-up, a lost message).
//
// Uses the plan includes cost nothing, so they need no credit: at the floor the check still lets through the calls the
// `calls` meter includes, as long as the plan's own meters have drawn nothing this period and each priced one includes
// units (a trial's 50,000 tokens, a free tier) — `freeOf`. The first draw beyond them takes the balance below the floor
// and the key stops as before.
import { overageMinor, overageUnits } from '../../../lib/usage-pricing.ts';
import type { MeterOptions } from '../usage/meters-config.ts';
import type { UsagePlan } from '../usage/usage-plan.ts';

/** How old an order's credit view may be before a check re-reads it in the background. */
export const CREDIT_REFRESH_MS = 2000;
/**
 * The wallet as its owner sees it: its currency (the client's), its balance in that currency's minor units, and an
 * amount of the default currency converted into it at the rate of the read, rounded once (as a draw is converted).
 */
export interface WalletView {
  currency: string;
  balance: number;
  toWallet: (amount: number) => number;
}

/**
 * The client's balance, what the order's `calls` meter drew this period and what its other meters drew, minor units of
 * the default currency (plans price uses in it); `wallet`, the same balance in the wallet's own currency, for get_info.
 */
export interface CreditView {
  balance: number;
  callsDrawn: number;
  metersDrawn: number;
  wallet?: WalletView;
}

/** Uses past which `stopAt` is not searched: a price so low that the balance never runs out by calls. */
const MAX_USES = 2 ** 50;

/** A prepaid order's credit as the check holds it (shared by its keys' records, on their OrderUsage). */
export interface OrderCredit {
  clientId: number;
  /** The calls meter's price (the plan's included uses and overage) and the currency's decimals. */
  plan: Pick<UsagePlan, 'included' | 'overage'>;
  precision: number;
  /** The lowest balance the plan allows, minor units (0, or −allow_negative). */
  floor: number;
  /** The client's balance at the last read, minor units. */
  balance: number;
  /** What the order's `calls` meter had drawn this period at the last read, minor units. */
  callsDrawn: number;
  /** Every priced meter of the plan (beside calls) includes units: until they draw, its usage costs nothing. */
  meterAllowance: boolean;
  /** What the plan's other meters had drawn this period at the last read, minor units. */
  metersDrawn: number;
  /** The order's uses this period at which the check refuses (0: at once; Infinity: calls never exhaust the balance). */
  stopAt: number;
  /**
   * Halfway from the uses at the last read to `stopAt`: reaching it flushes and draws at once rather than within the
   * second, so the other processes hear of this one's spending while half of what it saw is left (Infinity: not yet).
   */
  drawAt: number;
  /** The wallet in its own currency at the last read (null: shown in the default currency). */
  wallet: WalletView | null;
  /** When the view was last read (epoch ms); 0 asks for a read at the next check. */
  readAt: number;
  reading: Promise<void> | null;
  again: boolean;
  /** This process refused the order's keys for NO_CREDIT since the last read that found credit (wallet.depleted once). */
  depleted: boolean;
}

/** What the calls meter's `used` uses cost this period, minor units (0 when calls are not priced). */
export function callsCost(plan: Pick<UsagePlan, 'included' | 'overage'>, used: number, precision: number): number {
  return plan.overage === null ? 0 : overageMinor(plan.overage, overageUnits(used, plan.included), precision);
}

/**
 * The fewest uses whose calls cost reaches `target` minor units (Infinity: never). Pricing grows with uses (per_unit,
 * package, graduated), so a doubling then a binary search finds it in about 2 × 50 pricings — done when the view
 * changes, never per check.
 */
function usesReaching(plan: Pick<UsagePlan, 'included' | 'overage'>, target: number, precision: number): number {
  if (plan.overage === null) return Number.POSITIVE_INFINITY;
  const reaches = (uses: number): boolean => callsCost(plan, uses, precision) >= target;
  let high = Math.max(1, plan.included ?? 0);
  while (!reaches(high)) {
    if (high >= MAX_USES) return Number.POSITIVE_INFINITY;
    high *= 2;
  }
  let low = 0;
  // reaches(high) holds; find the smallest such count.
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (reaches(mid)) high = mid;
    else low = mid + 1;
  }
  return low;
}

/** Whether the plan's own meters still cost nothing: each priced one includes units, and none has drawn this period. */
export function freeOf(meterAllowance: boolean, metersDrawn: number): boolean {
  return meterAllowance && metersDrawn === 0;
}

/** Whether every priced meter of `meters` includes units (null: unlimited) — the plan's meters start free. */
export function meterAllowanceOf(meters: readonly Pick<MeterOptions, 'included' | 'overage'>[]): boolean {
  return meters.every((meter) => meter.overage === null || meter.included === null || meter.included > 0);
}

/**
 * The uses at which the check refuses: the fewest uses whose cost, beyond what calls drew already, takes the balance
 * to the floor or below. At the floor, when the plan's meters still cost nothing (`free`), the calls the plan
 * includes are let through: the uses after which the next one would cost more than calls drew.
 */
export function stopAtOf(plan: Pick<UsagePlan, 'included' | 'overage'>, balance: number, floor: number, callsDrawn: number, precision: number, free = false): number {
  if (balance <= floor) return free ? usesReaching(plan, callsDrawn + 1, precision) - 1 : 0;
  return usesReaching(plan, balance - floor + callsDrawn, precision);
}

/** The floor in minor units from the plan's micro-units, rounded toward zero (a stricter floor, never a looser one). */
export function floorMinor(floorMicros: bigint, precision: number): number {
  // BigInt division truncates toward zero.
  return Number(floorMicros / 10n ** BigInt(6 - precision));
}

/** Halfway from `used` to `stopAt` (Infinity when the balance is not run out by calls, or already is). */
export function drawAtOf(used: number, stopAt: number): number {
  return Number.isFinite(stopAt) && stopAt > used ? used + Math.ceil((stopAt - used) / 2) : Number.POSITIVE_INFINITY;
}

/** A prepaid order's credit from a view just read, with the order's uses then. */
export function orderCreditOf(
  clientId: number,
  plan: UsagePlan,
  meters: readonly Pick<MeterOptions, 'included' | 'overage'>[],
  view: CreditView,
  precision: number,
  now: number,
  used = 0,
): OrderCredit | null {
  if (plan.prepaidFloorMicros === null || plan.prepaidFloorMicros === undefined) return null;
  const floor = floorMinor(plan.prepaidFloorMicros, precision);
  const meterAllowance = meterAllowanceOf(meters);
  const stopAt = stopAtOf(plan, view.balance, floor, view.callsDrawn, precision, freeOf(meterAllowance, view.metersDrawn));
  return {
    clientId,
    plan: { included: plan.included, overage: plan.overage },
    precision,
    floor,
    balance: view.balance,
    callsDrawn: view.callsDrawn,
    meterAllowance,
    metersDrawn: view.metersDrawn,
    stopAt,
    drawAt: drawAtOf(used, stopAt),
    wallet: view.wallet ?? null,
    readAt: now,
    reading: null,
    again: false,
    depleted: false,
  };
}

/** A view just read: the balance and the calls drawn; `stopAt` follows, and a balance above the floor ends a depletion. */
export function applyView(credit: OrderCredit, view: CreditView, used: number, now: number): void {
  credit.balance = view.balance;
  credit.callsDrawn = view.callsDrawn;
  credit.metersDrawn = view.metersDrawn;
  credit.stopAt = stopAtOf(credit.plan, view.balance, credit.floor, view.callsDrawn, credit.precision, freeOf(credit.meterAllowance, view.metersDrawn));
  credit.drawAt = drawAtOf(used, credit.stopAt);
  credit.wallet = view.wallet ?? null;
  credit.readAt = now;
  if (used < credit.stopAt) credit.depleted = false;
}

/** The next usage period began: nothing is drawn in it yet; the view is re-read at the next check. */
export function rollCredit(credit: OrderCredit): void {
  credit.callsDrawn = 0;
  credit.metersDrawn = 0;
  credit.stopAt = stopAtOf(credit.plan, credit.balance, credit.floor, 0, credit.precision, freeOf(credit.meterAllowance, 0));
  credit.drawAt = drawAtOf(0, credit.stopAt);
  credit.readAt = 0;
}

/** The balance as get_info shows it: the last read less what this period's uses cost beyond what calls drew. */
export function projectedBalance(credit: OrderCredit, used: number): number {
  return credit.balance - undrawnCost(credit, used);
}

/** What this period's uses cost beyond what calls drew: the next draw, minor units of the default currency. */
function undrawnCost(credit: OrderCredit, used: number): number {
  return Math.max(0, callsCost(credit.plan, used, credit.precision) - credit.callsDrawn);
}

/**
 * The balance get_info shows, in the wallet's currency: the wallet's balance at the last read less the next draw
 * converted as the draw will be (so it is what the ledger says once the uses are drawn); null without a wallet view.
 */
export function projectedWallet(credit: OrderCredit, used: number): { currency: string; balance: number } | null {
  if (credit.wallet === null) return null;
  return { currency: credit.wallet.currency, balance: credit.wallet.balance - credit.wallet.toWallet(undrawnCost(credit, used)) };
}
