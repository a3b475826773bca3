// The one untaxed `deposit` line of a top-up invoice: paying the invoice credits its total to the wallet
// (invoice-credits.ts). Custom amounts, packs and auto-recharges all issue it.
import type { Money } from '../../lib/money.ts';
import type { InvoiceLine } from '../invoice/service.ts';

export function depositLine(money: Pick<Money, 'format' | 'currency'>, amount: number, title = 'Add funds to the account balance'): InvoiceLine {
  return { orderId: null, task: 'deposit', title: `${title} (${money.format(amount)} ${money.currency})`, period: null, quantity: 1, price: amount, total: amount };
}
