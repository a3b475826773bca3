// Placing orders: new orders for a client's lines, one invoice when something is owed, the coupon redeemed, and
// activation by each product's setup mode, all inside the caller's transaction. The cart's checkout places its lines
// here; staff place one order directly (admin/order/create).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { errors } from '../../platform/errors.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { moneyFor } from '../../lib/money.ts';
import type { Selling } from '../currency/selling.ts';
import { quoteIn } from '../product/currency-prices.ts';
import { periodLabel } from '../../lib/periods.ts';
import type { InvoiceLine, InvoiceService } from '../invoice/service.ts';
import type { Quote } from '../product/pricing.ts';
import { covers, discountOf, type PromoRow, type PromoService } from '../product/promos.ts';
import type { ProductRow, ProductService } from '../product/service.ts';
import { usageTermsOf } from '../product/usage-terms.ts';
import type { OrderRow, OrderService } from './service.ts';
import type { OrderTrials, StartedTrial } from './trials.ts';

/**
 * One line to order: the product, its price for the period in the client's currency (quoteIn), how many, and a unit
 * price staff set (else the quote's).
 */
export interface PlacedLine {
  product: ProductRow;
  quote: Quote;
  quantity: number;
  price?: number;
}

export interface PlaceOptions {
  /** Issue one invoice for what the new orders owe (none when the total is 0). */
  invoice: boolean;
  /** `auto`: by the product's setup mode; `now`: every order; `no`: none. */
  activate: 'auto' | 'now' | 'no';
  now: Date;
  promo?: PromoRow | undefined;
  /** Start the free trial of a product that offers one (the client's checkout; staff place orders without). */
  trials?: boolean;
  /** The buyer's IP country, evidence of where the sale is taxed (issue 26; null without a lookup). */
  ipCountry?: string | null;
  /** A trial that needs a card, checked out without one, waits for the card (a gateway can save one without paying). */
  awaitCard?: boolean;
}

export interface Placed {
  orders: OrderRow[];
  invoice: { id: number; hash: string } | null;
  /** Orders whose free trial waits for the client to save a card. */
  awaitingCard: number[];
}

export interface AdminOrderInput {
  client_id: number;
  product_id: number;
  period?: string | undefined;
  quantity?: number | undefined;
  price?: string | number | undefined;
  activate?: boolean | undefined;
  invoice_option?: 'no-invoice' | 'issue-invoice' | undefined;
}

export interface OrderPlacingDeps {
  db: Kysely<Database>;
  orders: Pick<OrderService, 'create' | 'transition'>;
  products: Pick<ProductService, 'requireRow' | 'pricingOf' | 'typeOf' | 'configOf'>;
  invoices: Pick<InvoiceService, 'create'>;
  promos: Pick<PromoService, 'redeem'>;
  /** The client's currency: orders are placed in it (the first one fixes it). */
  selling: Pick<Selling, 'useForClient'>;
  trials: Pick<OrderTrials, 'termsOf' | 'claim'>;
}

/** The invoice line of a new order: "Pro (Every month) — 1,000 calls included per billing period; then …" (item 3). */
function lineTitle(product: Pick<ProductRow, 'title'>, period: string | null, terms: string | null): string {
  const title = period === null ? product.title : `${product.title} (${periodLabel(period)})`;
  return terms === null ? title : `${title} — ${terms}`;
}

export function createOrderPlacing({ db, orders, products, invoices, promos, selling, trials }: OrderPlacingDeps) {

  /** Orders for the given lines, then an invoice if anything is owed, then activation per setup mode. */
  async function place(trx: Kysely<Database>, clientId: number, lines: PlacedLine[], options: PlaceOptions): Promise<Placed> {
    const { promo } = options;
    // The lines' prices are in the client's currency already (the caller quoted them in it): the orders record it.
    const sale = await selling.useForClient(trx, clientId);
    // Meter prices are set in the default currency (and billed converted at the close): the terms quote them as set.
    const termsOf = usageTermsOf(products, sale.defaultCode);
    const placed: Array<{ order: OrderRow; product: ProductRow; total: number; unit: number; trial: StartedTrial | 'awaiting_card' | null }> = [];
    for (const line of lines) {
      const unit = line.price ?? line.quote.price;
      const covered = promo !== undefined && promo.recurring === 1 && covers(promo, line.product.id, line.quote.period);
      const order = await orders.create(
        trx,
        { clientId, product: line.product, period: line.quote.period, quantity: line.quantity, price: unit, currency: sale.code, promoId: covered ? promo.id : null },
        options.now,
      );
      // A trial is only for a recurrent plan: at its end the first period is invoiced like a renewal.
      const terms = options.trials === true && line.quote.period !== null ? trials.termsOf(line.product) : null;
      const trial = terms === null ? null : await trials.claim(trx, order, line.product, terms, options.now, { awaitCard: options.awaitCard === true });
      // A line on trial costs nothing now (its setup price too: the first invoice comes at the trial's end); nor does
      // one whose trial waits for a card.
      placed.push({ order, product: line.product, total: trial === null ? unit * line.quantity + line.quote.setup : 0, unit, trial });
    }
    const subtotal = placed.reduce((sum, line) => sum + line.total, 0);
    if (!Number.isSafeInteger(subtotal)) throw errors.invalid('quantity', 'makes the total too large');
    const discount =
      promo === undefined ? 0 : discountOf(promo, placed.map(({ order, total: lineSum }) => ({ productId: order.product_id, period: order.period, total: lineSum })));
    const total = subtotal - discount;
    let invoice: { id: number; hash: string } | null = null;
    if (options.invoice && total > 0) {
      const invoiceLines: InvoiceLine[] = placed.filter(({ trial }) => trial === null).map(({ order, product, total: lineSum, unit }) => ({
        orderId: order.id,
        task: 'activate',
        title: lineTitle(product, order.period, termsOf(product)),
        period: order.period,
        quantity: order.quantity,
        price: unit,
        total: lineSum,
      }));
      const row = await invoices.create(trx, clientId, invoiceLines, { now: options.now, discount: promo === undefined ? null : { amount: discount, code: promo.code }, ipCountry: options.ipCountry ?? null });
      invoice = { id: row.id, hash: row.hash };
    }
    if (promo !== undefined) await promos.redeem(trx, promo, clientId, invoice?.id ?? null, options.now);
    for (const { order, product, trial } of placed) {
      // Waits, pending, for the card (order/trials.ts startAwaiting).
      if (trial === 'awaiting_card') continue;
      if (trial !== null) {
        // A trial starts at once, whatever the setup mode: nothing is waiting to be paid.
        await orders.transition(trx, order.id, 'activate', { now: options.now, trial });
        continue;
      }
      const activate =
        options.activate === 'now' ||
        (options.activate === 'auto' && product.setup !== 'manual' && (invoice === null || product.setup === 'after_order'));
      if (activate) await orders.transition(trx, order.id, 'activate', { now: options.now });
    }
    return { orders: placed.map(({ order }) => order), invoice, awaitingCard: placed.filter(({ trial }) => trial === 'awaiting_card').map(({ order }) => order.id) };
  }

  return {
    place,

    /** admin/order/create: an order for a client, optionally activated and/or invoiced at once. */
    async adminCreate(input: AdminOrderInput, now = new Date()): Promise<number> {
      return inTransaction(db, async (trx) => {
        const client = await trx.selectFrom('clients').select('id').where('id', '=', input.client_id).executeTakeFirst();
        if (client === undefined) throw errors.notFound('Client');
        const product = await products.requireRow(input.product_id, trx);
        // Staff place it in the client's currency: the product's price there, and `price` read in its decimals.
        const sale = await selling.useForClient(trx, input.client_id);
        const q = quoteIn(products.pricingOf(product), input.period, sale, { allowDisabled: true });
        const price = input.price === undefined ? undefined : moneyFor(sale.code).parse(input.price, 'price');
        const placed = await place(trx, input.client_id, [{ product, quote: q, quantity: input.quantity ?? 1, ...(price !== undefined && { price }) }], {
          invoice: input.invoice_option === 'issue-invoice',
          activate: input.activate === true ? 'now' : 'no',
          now,
        });
        return placed.orders[0]!.id;
      });
    },
  };
}

export type OrderPlacing = ReturnType<typeof createOrderPlacing>;
