// The invoice module's balance actions: a client asks for a top-up invoice (FOSSBilling's funds_invoice) and pays an
// unpaid invoice from its balance (pay_with_credits: FOSSBilling has it for staff; Tollgate gives it to clients too).
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import { errors } from '../../platform/errors.ts';
import { InvalidInput } from '../../lib/invalid-input.ts';
import { parseMoney, precisionOf } from '../../lib/money.ts';
import { Done } from '../../platform/schemas.ts';
import type { InvoiceCredits } from './invoice-credits.ts';
import type { CreditService } from './service.ts';

export interface InvoiceCreditNeeds {
  /** A top-up is in the client's currency: its amount is read in that currency's decimals. */
  credits: Pick<CreditService, 'currencyOf'>;
  invoiceCredits: Pick<InvoiceCredits, 'fundsInvoice' | 'payInvoice' | 'idByHash'>;
}

const { adminAction, clientAction } = actionsFor<InvoiceCreditNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Hash = Type.String({ minLength: 1, maxLength: 64 });
const Amount = Type.Optional(
  Type.Union([Type.String({ maxLength: 40 }), Type.Number()], {
    description: 'Pay only this much of it from the balance (at most what is due); the rest stays due, for a card. Absent: all that is due',
  }),
);

export const invoiceCreditAdminActions = {
  pay_with_credits: adminAction({
    params: Type.Object({ id: Id, amount: Amount }),
    permission: 'invoice.manage',
    summary:
      "Pays the unpaid invoice from its client's balance (a `consume` line): all that is due, or `amount` of it (the rest stays due, for a card); 409 when the balance does not cover it or the invoice is not unpaid",
    result: Done,
    async handler({ id, amount }, { services }) {
      await services.invoiceCredits.payInvoice(id, undefined, new Date(), amount);
      return true;
    },
  }),
};

export const invoiceCreditClientActions = {
  funds_invoice: clientAction({
    params: Type.Object({ amount: Type.Union([Type.String({ maxLength: 40 }), Type.Number()]) }),
    summary:
      'Issues an unpaid, untaxed top-up invoice for `amount`; paying it by any gateway credits the balance once. Returns the invoice hash, as FOSSBilling. Zero, negative, too many decimals, or outside funds_min_amount..funds_max_amount → 422',
    result: Type.String({ description: 'The invoice hash' }),
    handler: async ({ amount }, { services, identity }) => {
      if (typeof amount === 'string' && amount.trim().startsWith('-')) throw new InvalidInput('amount', 'must be more than 0');
      if (typeof amount === 'number' && amount < 0) throw new InvalidInput('amount', 'must be more than 0');
      return services.invoiceCredits.fundsInvoice(identity.client.id, parseMoney(amount, 'amount', precisionOf(await services.credits.currencyOf(identity.client.id))));
    },
  }),
  pay_with_credits: clientAction({
    params: Type.Object({ id: Type.Optional(Id), hash: Type.Optional(Hash), amount: Amount }),
    summary:
      'Pays an own unpaid invoice (by `id` or `hash`) from the balance: all that is due, or `amount` of it (the rest stays due, for a card); 409 when the balance does not cover it or the invoice is not unpaid',
    result: Done,
    async handler({ id, hash, amount }, { services, identity }) {
      if (id === undefined && hash === undefined) throw new InvalidInput('id', 'or hash is required');
      const invoiceId = id ?? (await services.invoiceCredits.idByHash(hash!));
      if (invoiceId === null) throw errors.notFound('Invoice');
      await services.invoiceCredits.payInvoice(invoiceId, identity.client.id, new Date(), amount);
      return true;
    },
  }),
};
