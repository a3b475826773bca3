// Notices (CONTRACT §10): the mails that follow a change, each queued by listening to the event of the service that
// owns the change, inside that change's transaction — never from an action. The invoice, order and client are read
// by their owners (`invoices`, `orders`, `clients`: narrow reads, never their tables from here) through the event's
// transaction (`trx`): the row may not be committed yet, and on SQLite a second handle would wait for the very
// transaction it is part of. Nothing here ever reads an API key or a token.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { moneyFor } from '../../lib/money.ts';
import { invoiceLabel, invoiceReference } from '../../lib/invoice-label.ts';
import { isoSeconds } from '../../lib/time.ts';
import { defaultOutboxLog, type OutboxLog } from '../outbox/service.ts';
import { isPlainAddress, type MailService } from './service.ts';
import { registerKeyNotices, type KeyNoticesDeps } from './key-notices.ts';
import type { ClientMailRecipients } from '../client/mail-recipient.ts';
import type { InvoiceNoticeReads } from '../invoice/notice-reads.ts';
import type { OrderNoticeReads } from '../order/notice-reads.ts';
// The events these notices listen to are declared by their owners; importing the declarations makes them known here.
import '../order/events.ts';
import '../invoice/events.ts';
import '../payment/events.ts';
import '../serviceapikey/events.ts';
import '../credit/events.ts';

export interface NoticesDeps {
  db: Kysely<Database>;
  events: EventBus;
  mail: Pick<MailService, 'queue' | 'isQueued' | 'queuedKeys'>;
  /** Who a client's mail goes to (client/mail-recipient.ts). */
  clients: Pick<ClientMailRecipients, 'recipient'>;
  /** The invoice a notice names, the orders a renewal renews, the invoices a reminder may be due for (invoice/notice-reads.ts). */
  invoices: Pick<InvoiceNoticeReads, 'invoice' | 'renewedOrderIds' | 'unpaidDueBetween'>;
  /** The order a notice names (order/notice-reads.ts). */
  orders: Pick<OrderNoticeReads, 'summary'>;
  /** The delayed, coalesced key validity notices (key-notices.ts). */
  outbox: KeyNoticesDeps['outbox'];
  /** The key module's answer to "is this key switched on now?" (key-notices.ts reads no key table itself). */
  keyIsSwitchedOn: KeyNoticesDeps['keyIsSwitchedOn'];
  /** PUBLIC_URL without a trailing slash. */
  publicUrl: string;
  /** The days invoice reminders go out, from the due date (negative: before); read at every run. */
  reminderDays?: () => readonly number[];
  log?: OutboxLog;
}

const DAY_MS = 86_400_000;
/**
 * invoice_reminder's default days, from the due date (negative: before it): the `invoice_reminder_days` setting
 * (CONTRACT §8) replaces them.
 */
export const DEFAULT_REMINDER_DAYS: readonly number[] = [-3, -1, 1, 3, 7];

const day = (iso: string | null): string => (iso === null ? '' : iso.slice(0, 10));

export function registerNotices({ db, events, mail, clients, invoices, orders, outbox, keyIsSwitchedOn, publicUrl, reminderDays = () => DEFAULT_REMINDER_DAYS, log = defaultOutboxLog }: NoticesDeps) {
  const links = {
    invoice: (id: number) => `${publicUrl}/invoices/${id}`,
    orders: () => `${publicUrl}/orders`,
    keys: () => `${publicUrl}/keys`,
    wallet: () => `${publicUrl}/wallet`,
  };

  async function invoiceVars(trx: Kysely<Database>, invoiceId: number) {
    const invoice = await invoices.invoice(trx, invoiceId);
    if (invoice === undefined) return null;
    return {
      invoice,
      vars: {
        // The invoice's one name: its number once paid, "Pro forma <id>" before (never a bare id).
        invoice: invoiceLabel(invoice),
        invoice_number: invoiceReference(invoice),
        invoice_total: `${moneyFor(invoice.currency).format(invoice.total)} ${invoice.currency}`,
        invoice_due: day(invoice.due_at),
        invoice_url: links.invoice(invoice.id),
      },
    };
  }

  async function toClient(
    trx: Kysely<Database>,
    clientId: number,
    template: Parameters<MailService['queue']>[1]['template'],
    vars: Record<string, string | number>,
    extra: { attachInvoicePdf?: number; dedupeKey?: string } = {},
  ): Promise<number> {
    const to = await clients.recipient(trx, clientId);
    if (to === null) return 0;
    // An address the sign-up form let through but that is not one plain address (a comma, quotes) would be refused
    // by the mail service; the change that caused the notice must not fail for it.
    if (!isPlainAddress(to.email)) {
      log('warn', `mail not queued: client ${clientId}'s address is not one plain address`, { template });
      return 0;
    }
    return mail.queue(trx, { template, to, clientId, vars, ...extra });
  }

  /** The first order (by item) the invoice renews that still exists; undefined when it renews none. */
  async function renewedOrder(trx: Kysely<Database>, invoiceId: number) {
    for (const orderId of await invoices.renewedOrderIds(trx, invoiceId)) {
      const order = await orders.summary(trx, orderId);
      if (order !== undefined) return order;
    }
    return undefined;
  }

  // A renewal invoice is announced as the order's renewal reminder (with the pay link); any other as a new invoice.
  events.on('invoice.created', async ({ invoiceId, clientId }, trx) => {
    const found = await invoiceVars(trx, invoiceId);
    if (found === null) return;
    const renewal = await renewedOrder(trx, invoiceId);
    if (renewal !== undefined) {
      await toClient(trx, clientId, 'order_renewal_reminder', {
        ...found.vars,
        order_title: renewal.title,
        expires_at: day(renewal.expires_at),
        order_url: links.orders(),
      });
    } else {
      await toClient(trx, clientId, 'invoice_created', found.vars);
    }
  });

  events.on('invoice.paid', async ({ invoiceId, clientId }, trx) => {
    const found = await invoiceVars(trx, invoiceId);
    if (found === null) return;
    await toClient(trx, clientId, 'invoice_paid', found.vars, { attachInvoicePdf: invoiceId });
  });

  events.on('invoice.payment_failed', async ({ invoiceId, clientId, message }, trx) => {
    const found = await invoiceVars(trx, invoiceId);
    if (found === null) return;
    await toClient(trx, clientId, 'invoice_payment_failed', { ...found.vars, message });
  });

  // A late card payment given back (payment/late-refunds.ts): once per recorded refund.
  events.on('invoice.payment_refunded', async ({ invoiceId, clientId, amount, currency }, trx) => {
    const found = await invoiceVars(trx, invoiceId);
    if (found === null) return;
    await toClient(trx, clientId, 'invoice_payment_refunded', { ...found.vars, amount: `${moneyFor(currency).format(amount)} ${currency}` });
  });

  const orderOf = (trx: Kysely<Database>, orderId: number) => orders.summary(trx, orderId);

  // API-key plans: "your key is ready" with a link to the keys page — never the key.
  events.on('order.activated', async ({ orderId, clientId }, trx) => {
    const order = await orderOf(trx, orderId);
    if (order === undefined) return;
    await toClient(trx, clientId, 'order_activated', {
      order_title: order.title,
      order_url: links.orders(),
      keys_url: order.type === 'apikey' ? links.keys() : '',
    });
  });

  // Three days before a free trial ends (cron/trials.ts emits it once per order).
  events.on('order.trial_will_end', async ({ orderId, clientId, trialEndsAt }, trx) => {
    const order = await orderOf(trx, orderId);
    if (order === undefined) return;
    await toClient(trx, clientId, 'order_trial_will_end', { order_title: order.title, trial_ends_at: day(trialEndsAt), order_url: links.orders() });
  });

  events.on('order.suspended', async ({ orderId, clientId, reason }, trx) => {
    const order = await orderOf(trx, orderId);
    if (order === undefined) return;
    await toClient(trx, clientId, 'order_suspended', { order_title: order.title, reason: reason ?? '', order_url: links.orders() });
  });

  events.on('order.canceled', async ({ orderId, clientId, reason }, trx) => {
    const order = await orderOf(trx, orderId);
    if (order === undefined) return;
    await toClient(trx, clientId, 'order_canceled', { order_title: order.title, reason: reason ?? '', order_url: links.orders() });
  });

  events.on('apikey.reset', async ({ orderId, clientId }, trx) => {
    const order = await orderOf(trx, orderId);
    await toClient(trx, clientId, 'apikey_reset', { order_title: order?.title ?? `Order #${orderId}`, keys_url: links.keys() });
  });

  // A key switched off (or deleted): coalesced, at most one mail per key per hour with the latest state (key-notices.ts).
  registerKeyNotices({
    db,
    events,
    outbox,
    keyIsSwitchedOn,
    sendDisabled: async (trx, { orderId, clientId, dedupeKey }) => {
      const order = await orderOf(trx, orderId);
      return toClient(trx, clientId, 'apikey_disabled', { order_title: order?.title ?? `Order #${orderId}`, keys_url: links.keys() }, { dedupeKey });
    },
  });

  // Usage plans (CONTRACT §12, issue 23): each alert percentage of a meter's included units, once per period
  // (serviceapikey/usage/alert-sender.ts); the mail names the meter and its unit.
  events.on('usage.threshold_reached', async ({ orderId, clientId, meterName, unit, threshold, used, included }, trx) => {
    const order = await orderOf(trx, orderId);
    await toClient(trx, clientId, 'usage_threshold', {
      order_title: order?.title ?? `Order #${orderId}`,
      meter_name: meterName,
      unit,
      threshold,
      used: used.toLocaleString('en-US'),
      included: included.toLocaleString('en-US'),
      keys_url: links.keys(),
    });
  });

  // Prepaid credits (issue 24): the client's low-balance alert, once per crossing (credit/watches.ts).
  events.on('wallet.low_balance', async ({ clientId, currency, balance, threshold }, trx) => {
    await toClient(trx, clientId, 'wallet_low_balance', { balance: `${moneyFor(currency).format(balance)} ${currency}`, threshold: `${moneyFor(currency).format(threshold)} ${currency}`, wallet_url: links.wallet() });
  });

  return {
    /**
     * invoice_reminder, run by the scheduled jobs: an unpaid invoice is mentioned on the days the
     * `invoice_reminder_days` setting names (default 3 days and 1 day before its due date, 1, 3 and 7 days after it)
     * — each once (an outbox dedupe key), so at most one reminder per invoice and day however often the jobs run.
     * Returns how many reminders were queued.
     */
    async queueInvoiceReminders(now: Date): Promise<number> {
      const days = reminderDays();
      const daysBefore = days.filter((offset) => offset < 0).map((offset) => -offset);
      const daysAfter = days.filter((offset) => offset >= 0);
      if (days.length === 0) return 0;
      const nowMs = now.getTime();
      const from = isoSeconds(new Date(nowMs - (Math.max(0, ...daysAfter) + 1) * DAY_MS));
      const to = isoSeconds(new Date(nowMs + Math.max(0, ...daysBefore) * DAY_MS));
      const rows = await invoices.unpaidDueBetween(from, to);
      // The jobs run every minute: find the invoices in a reminder slot, then skip in one query those reminded already.
      const due: Array<{ id: number; clientId: number; overdue: boolean; dedupeKey: string }> = [];
      for (const row of rows) {
        const dueMs = Date.parse(row.due_at);
        const before = Math.ceil((dueMs - nowMs) / DAY_MS);
        const after = Math.floor((nowMs - dueMs) / DAY_MS);
        const slot =
          dueMs > nowMs ? (daysBefore.includes(before) ? `before${before}` : null) : daysAfter.includes(after) ? `after${after}` : null;
        if (slot !== null) due.push({ id: row.id, clientId: row.client_id, overdue: dueMs <= nowMs, dedupeKey: `invoice_reminder:${row.id}:${slot}` });
      }
      const done = await mail.queuedKeys(due.map((reminder) => reminder.dedupeKey));
      let queued = 0;
      for (const reminder of due) {
        if (done.has(reminder.dedupeKey)) continue;
        const id = await inTransaction(db, async (trx) => {
          // Checked again inside the transaction: another process may have queued it meanwhile.
          if (await mail.isQueued(trx, reminder.dedupeKey)) return 0;
          const found = await invoiceVars(trx, reminder.id);
          if (found?.invoice.status !== 'unpaid') return 0;
          return toClient(trx, reminder.clientId, 'invoice_reminder', { ...found.vars, overdue: reminder.overdue ? 'yes' : '' }, { dedupeKey: reminder.dedupeKey });
        });
        if (id !== 0) queued += 1;
      }
      return queued;
    },
  };
}

export type Notices = ReturnType<typeof registerNotices>;
