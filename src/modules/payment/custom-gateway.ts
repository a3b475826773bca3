// The manual gateway (`custom`, id 1): no provider, the payer follows instructions and staff record the payment.
import { invoiceReference } from '../../lib/invoice-label.ts';
import type { PaymentGateway } from './gateways.ts';

/**
 * The built-in manual gateway: the payer follows the instructions, staff confirm with admin/invoice/mark_as_paid.
 * `paymentInstructions` may be a function, read on every call (the `payment_instructions` setting). For one invoice
 * the instructions end with the reference to quote, the invoice's one name (`Pro forma 12` before it is paid).
 */
export function customGateway(paymentInstructions: string | (() => string)): PaymentGateway {
  return {
    id: 1,
    code: 'custom',
    title: 'Manual payment',
    instructions: (invoice) => {
      const text = typeof paymentInstructions === 'string' ? paymentInstructions : paymentInstructions();
      return invoice === null ? text : `${text}\n\nReference to quote: ${invoiceReference(invoice)}`;
    },
  };
}
