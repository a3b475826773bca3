// invoice: staff read, mark paid, cancel and refund; clients read their own and ask for renewal invoices; guests
// read one invoice by its unguessable hash and the payment gateways.
import { invoiceFileName } from '../../lib/invoice-label.ts';
import { Type } from '@sinclair/typebox';
import { actionsFor, FileResult, type ModuleApi } from '../../platform/action.ts';
import type { InvoiceRecord } from './service.ts';
import { searchParams } from '../../platform/list-filters.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { enforce } from '../../platform/rate-limit.ts';
import { parseMoney, precisionOf } from '../../lib/money.ts';
import { Done, FileDownload, PageOf } from '../../platform/schemas.ts';
import { Gateway, Invoice, PaymentStart, StaffInvoicePage, TaxRule, Transaction } from './results.ts';
import type { RateLimiter } from '../../platform/rate-limit.ts';
import type { PaymentService } from '../payment/service.ts';
import type { InvoicePayments } from './payments.ts';
import type { GatewayRegistry } from '../payment/gateways.ts';
import type { GatewayPayments } from '../payment/gateway-payments.ts';
import type { InvoiceService } from './service.ts';
import type { TaxService } from './taxes.ts';
import { invoiceCreditAdminActions, invoiceCreditClientActions, type InvoiceCreditNeeds } from '../credit/invoice-actions.ts';
import { creditNoteAdminActions, creditNoteClientActions, type CreditNoteNeeds } from './credit-notes/api.ts';
import { vatInvoiceAdminActions, type VatInvoiceNeeds } from '../vat/invoice-actions.ts';

/** The services this module's actions use. */
export interface InvoiceNeeds extends InvoiceCreditNeeds, CreditNoteNeeds, VatInvoiceNeeds {
  limiter: Pick<RateLimiter, 'isExempt' | 'hit'>;
  invoices: Pick<InvoiceService, 'list' | 'get' | 'getByHash' | 'markAsPaid' | 'cancel' | 'pdf' | 'renewalInvoice' | 'currencyOf'>;
  invoicePayments: Pick<InvoicePayments, 'listTransactions'>;
  payments: Pick<PaymentService, 'start' | 'listGateways'>;
  /** mark_as_paid names a gateway by id or code: the payment module's registry knows them. */
  gateways: Pick<GatewayRegistry, 'require'>;
  /** A refund of a card payment goes through its provider. */
  gatewayPayments: Pick<GatewayPayments, 'refund'>;
  taxes: Pick<TaxService, 'create' | 'list' | 'get' | 'update' | 'delete'>;
}

const { adminAction, clientAction, guestAction } = actionsFor<InvoiceNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const ById = Type.Object({ id: Id });
const Status = Type.Union([Type.Literal('unpaid'), Type.Literal('paid'), Type.Literal('canceled'), Type.Literal('refunded')]);
const TransactionId = Type.String({ maxLength: 255 });
const TransactionStatus = Type.Union([Type.Literal('processed'), Type.Literal('failed'), Type.Literal('refunded'), Type.Literal('error')]);
/** A gateway by id (`2`) or code (`"stripe"`), as FOSSBilling's gateway_id. */
const GatewayRef = Type.Union([Type.Integer({ minimum: 1, maximum: 2_147_483_647 }), Type.String({ minLength: 1, maxLength: 32 })]);
const Amount = Type.Union([Type.String({ maxLength: 40 }), Type.Number()]);

/** An amount of the invoice `id`, in its currency's decimals (¥ none, KWD three). */
async function parseAmount(services: { invoices: Pick<InvoiceService, 'currencyOf'> }, id: number, amount: string | number): Promise<number> {
  return parseMoney(amount, 'amount', precisionOf(await services.invoices.currencyOf(id)));
}

const Rate = Type.Union([Type.String({ maxLength: 16 }), Type.Number()]);
const TaxFields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  rate: Rate,
  country: Type.Optional(Type.String({ maxLength: 2 })),
  state: Type.Optional(Type.String({ maxLength: 255 })),
};

/** The invoice as a PDF download named after its number (or "proforma-<id>"). */
async function pdfOf(invoices: Pick<InvoiceService, 'pdf'>, invoice: InvoiceRecord): Promise<FileResult> {
  return new FileResult('application/pdf', await invoices.pdf(invoice.id), invoiceFileName(invoice));
}

export const invoiceApi: ModuleApi<InvoiceNeeds> = {
  name: 'invoice',
  admin: {
    get_list: adminAction({
      params: Type.Object({ status: Type.Optional(Status), client_id: Type.Optional(Id), ...searchParams, ...paginationParams }),
      permission: 'invoice.view',
      summary:
        "Invoices, newest first; `search` matches the client's e-mail or name, the invoice number, or (digits) the invoice id; `date_from`/`date_to` (YYYY-MM-DD, inclusive) bound created_at; each invoice carries client_email and client_name",
      result: StaffInvoicePage,
      handler: (params, { services }) => services.invoices.list(params),
    }),
    get: adminAction({
      params: ById,
      permission: 'invoice.view',
      summary: 'One invoice with its lines, seller and buyer',
      result: Invoice,
      handler: ({ id }, { services }) => services.invoices.get(id),
    }),
    mark_as_paid: adminAction({
      params: Type.Object({
        id: Id,
        transaction_id: Type.Optional(TransactionId),
        transactionId: Type.Optional(TransactionId),
        gateway_id: Type.Optional(Id),
        execute: Type.Optional(Type.Boolean()),
      }),
      permission: 'invoice.manage',
      summary: 'Records a payment and (unless execute=false) activates or renews the orders; paying twice → 409',
      result: Done,
      async handler(params, { services }) {
        // The gateway named is the payment module's to know (422 when unknown); the invoice records its id and code.
        const gateway = params.gateway_id === undefined ? undefined : services.gateways.require(params.gateway_id);
        await services.invoices.markAsPaid(params.id, {
          transactionId: params.transaction_id ?? params.transactionId,
          gatewayId: params.gateway_id,
          gatewayCode: gateway?.code,
          execute: params.execute,
        });
        return true;
      },
    }),
    cancel: adminAction({
      params: ById,
      permission: 'invoice.manage',
      summary: 'Cancels an unpaid invoice (409 once paid)',
      result: Done,
      async handler({ id }, { services }) {
        await services.invoices.cancel(id);
        return true;
      },
    }),
    pdf: adminAction({
      params: ById,
      permission: 'invoice.view',
      summary: 'The invoice as application/pdf (errors stay JSON envelopes)',
      result: FileDownload('application/pdf'),
      handler: async ({ id }, { services }) => pdfOf(services.invoices, await services.invoices.get(id)),
    }),
    tax_create: adminAction({
      params: Type.Object(TaxFields),
      permission: 'invoice.manage',
      summary: 'A tax rule {name, rate (percent), country?, state?} → id; one rule per country and state (409)',
      result: Type.Integer({ description: 'The new rule id' }),
      handler: (params, { services }) => services.taxes.create(params),
    }),
    tax_get_list: adminAction({
      params: Type.Object({ ...paginationParams }),
      permission: 'invoice.view',
      summary: 'Tax rules',
      result: PageOf(TaxRule),
      handler: (params, { services }) => services.taxes.list(params),
    }),
    tax_get: adminAction({
      params: ById,
      permission: 'invoice.view',
      summary: 'One tax rule',
      result: TaxRule,
      handler: ({ id }, { services }) => services.taxes.get(id),
    }),
    tax_update: adminAction({
      params: Type.Object({
        id: Id,
        name: Type.Optional(TaxFields.name),
        rate: Type.Optional(Rate),
        country: Type.Optional(Type.String({ maxLength: 2 })),
        state: Type.Optional(Type.String({ maxLength: 255 })),
      }),
      permission: 'invoice.manage',
      summary: 'Changes a tax rule; invoices already issued keep the tax they were issued with',
      result: Done,
      async handler({ id, ...fields }, { services }) {
        await services.taxes.update(id, fields);
        return true;
      },
    }),
    tax_delete: adminAction({
      params: ById,
      permission: 'invoice.manage',
      summary: 'Deletes a tax rule; invoices already issued keep their tax',
      result: Done,
      async handler({ id }, { services }) {
        await services.taxes.delete(id);
        return true;
      },
    }),
    refund: adminAction({
      params: Type.Object({ id: Id, amount: Type.Optional(Amount), reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })) }),
      permission: 'invoice.manage',
      summary:
        'Refunds all that is left to credit of the invoice (paid → refunded) or `amount` of it; a card payment is refunded through its gateway. Each refund makes a credit note (with `reason`, default "Refund"). Suspends nothing by itself',
      result: Done,
      // Not in the action's transaction (docs/audit-log.md): the gateway's refund is a network call that would hold
      // SQLite's one connection meanwhile, and money returned by the provider must not be undone locally by a later
      // rollback; the refund records commit in their own transactions, and the entry is written after success.
      audit: 'after',
      async handler({ id, amount, reason }, { services }) {
        const minor = amount === undefined ? undefined : await parseAmount(services, id, amount);
        await services.gatewayPayments.refund(id, minor, new Date(), reason ?? null);
        return true;
      },
    }),
    transaction_get_list: adminAction({
      params: Type.Object({
        invoice_id: Type.Optional(Id),
        client_id: Type.Optional(Id),
        gateway: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
        status: Type.Optional(TransactionStatus),
        ...paginationParams,
      }),
      permission: 'invoice.view',
      summary: 'Payments and refunds, newest first',
      result: PageOf(Transaction),
      handler: (params, { services }) => services.invoicePayments.listTransactions(params),
    }),
    ...invoiceCreditAdminActions,
    ...creditNoteAdminActions,
    ...vatInvoiceAdminActions,
  },
  client: {
    get_list: clientAction({
      params: Type.Object({ status: Type.Optional(Status), ...paginationParams }),
      summary: "The caller's invoices, newest first",
      result: PageOf(Invoice),
      handler: (params, { services, identity }) => services.invoices.list(params, identity.client.id),
    }),
    get: clientAction({
      params: ById,
      summary: 'One own invoice with its lines',
      result: Invoice,
      handler: ({ id }, { services, identity }) => services.invoices.get(id, identity.client.id),
    }),
    pdf: clientAction({
      params: ById,
      summary: 'An own invoice as application/pdf',
      result: FileDownload('application/pdf'),
      handler: async ({ id }, { services, identity }) => pdfOf(services.invoices, await services.invoices.get(id, identity.client.id)),
    }),
    renewal_invoice: clientAction({
      params: Type.Object({ order_id: Id }),
      summary:
        'The unpaid renewal invoice of an own recurrent order (issued now if there is none); 409 while a plan change of the order is unpaid or the order is canceled at period end',
      result: Type.Integer({ description: 'The invoice id' }),
      handler: ({ order_id }, { services, identity }) => services.invoices.renewalInvoice(order_id, identity.client.id),
    }),
    ...invoiceCreditClientActions,
    ...creditNoteClientActions,
  },
  guest: {
    get: guestAction({
      params: Type.Object({ hash: Type.String({ minLength: 1, maxLength: 64 }) }),
      summary: 'The invoice with this hash',
      result: Invoice,
      handler: ({ hash }, { services }) => services.invoices.getByHash(hash),
    }),
    payment: guestAction({
      params: Type.Object({ hash: Type.String({ minLength: 1, maxLength: 64 }), gateway_id: GatewayRef }),
      rateLimit: 'PAYMENT',
      summary: 'Starts paying the invoice: {redirect_url} for an online gateway, {instructions} for the manual one',
      result: PaymentStart,
      handler: ({ hash, gateway_id }, { services, ip, reply }) =>
        services.payments.start(hash, gateway_id, async (invoiceId) => {
          // PAYMENT counts per IP (the gateway applies it) and per invoice, so one invoice cannot be hammered from many.
          if (!services.limiter.isExempt(ip)) enforce(reply, await services.limiter.hit('PAYMENT', `invoice:${invoiceId}`));
        }),
    }),
    pdf: guestAction({
      params: Type.Object({ hash: Type.String({ minLength: 1, maxLength: 64 }) }),
      summary: 'The invoice with this hash as application/pdf',
      result: FileDownload('application/pdf'),
      handler: async ({ hash }, { services }) => pdfOf(services.invoices, await services.invoices.getByHash(hash)),
    }),
    gateways: guestAction({
      params: Type.Object({}),
      summary: 'The payment gateways an invoice can be paid with',
      result: Type.Array(Gateway),
      handler: (_params, { services }) => services.payments.listGateways(),
    }),
  },
};
