// The client module's balance actions (FOSSBilling's Client module names and shapes): staff list a ledger, add funds
// and remove a line (a compensating adjust: the ledger is never edited); a client lists its own lines and reads its
// total. The credit service does the work.
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { parseMoney, precisionOf } from '../../lib/money.ts';
import { InvalidInput } from '../../lib/invalid-input.ts';
import { Done, Money, PageOf, Timestamp } from '../../platform/schemas.ts';
import { BalanceLine, CreditKindSchema } from './results.ts';
import type { CreditService } from './service.ts';

export interface BalanceNeeds {
  credits: Pick<CreditService, 'list' | 'total' | 'addFunds' | 'reverse' | 'currencyOf'>;
}

const { adminAction, clientAction } = actionsFor<BalanceNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Amount = Type.Union([Type.String({ maxLength: 40 }), Type.Number()]);
const DateBound = Type.String({ maxLength: 40, description: 'YYYY-MM-DD (the whole day) or an ISO 8601 time' });
const listFilters = { date_from: Type.Optional(DateBound), date_to: Type.Optional(DateBound), type: Type.Optional(CreditKindSchema), ...paginationParams };

/** A signed decimal amount ("-5.00" takes funds away) as minor units; the currency's precision at most. */
export function parseSigned(value: string | number, precision: number): number {
  const text = typeof value === 'number' ? String(value) : value.trim();
  if (text.startsWith('-')) {
    const minor = parseMoney(text.slice(1), 'amount', precision);
    if (minor === 0) throw new InvalidInput('amount', 'must not be 0');
    return -minor;
  }
  return parseMoney(text, 'amount', precision);
}

export const balanceAdminActions = {
  balance_get_list: adminAction({
    params: Type.Object({ client_id: Type.Optional(Id), id: Type.Optional(Id), ...listFilters }),
    permission: 'client.manage_balance',
    summary: "Ledger lines of every client (or one client's with `client_id`), newest first; the balance is their sum",
    result: PageOf(BalanceLine),
    handler: (params, { services }) => services.credits.list(params),
  }),
  balance_add_funds: adminAction({
    params: Type.Object({
      id: Id,
      amount: Amount,
      description: Type.String({ minLength: 1, maxLength: 255 }),
      type: Type.Optional(Type.Union([Type.Literal('adjust'), Type.Literal('grant')])),
      expires_at: Type.Optional(Timestamp),
      idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    }),
    permission: 'client.manage_balance',
    summary:
      'Adds `amount` to client `id`\'s balance as an `adjust` line with the description as its reason, or a promotional `grant` (`type: "grant"` or `expires_at`: spent first, what is left expires); a negative amount takes funds away (409 past the balance). The same `idempotency_key` again adds nothing',
    result: Done,
    async handler(params, { services, identity }) {
      // In the client's currency (their wallet's): ¥ takes no decimals, KWD three.
      const amount = parseSigned(params.amount, precisionOf(await services.credits.currencyOf(params.id)));
      const grant = params.type === 'grant' || params.expires_at !== undefined;
      if (params.type === 'adjust' && params.expires_at !== undefined) throw new InvalidInput('expires_at', 'is for grants only');
      await services.credits.addFunds({
        clientId: params.id,
        amount,
        description: params.description,
        type: grant ? 'grant' : 'adjust',
        expiresAt: params.expires_at === undefined ? null : new Date(params.expires_at).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        key: params.idempotency_key ?? null,
        staffId: identity.staff.id,
      });
      return true;
    },
  }),
  balance_get_total: adminAction({
    params: Type.Object({ id: Id }),
    permission: 'client.manage_balance',
    summary: "Client `id`'s balance (the sum of its lines) as a decimal string; 404 for an unknown client. Not in FOSSBilling, whose admin reads it from the client record",
    result: Money,
    handler: ({ id }, { services }) => services.credits.total(id, true),
  }),
  balance_delete: adminAction({
    params: Type.Object({ id: Id }),
    permission: 'client.manage_balance',
    summary:
      'Removes a balance line the ledger way: writes an `adjust` line of the opposite amount naming it (`reverses_id`); 409 when it was removed already, is itself a reversal, or the balance no longer holds the credit',
    result: Done,
    async handler({ id }, { services, identity }) {
      await services.credits.reverse(id, identity.staff.id);
      return true;
    },
  }),
};

export const balanceClientActions = {
  balance_get_list: clientAction({
    params: Type.Object(listFilters),
    summary: "The caller's balance lines, newest first",
    result: PageOf(BalanceLine),
    handler: (params, { services, identity }) => services.credits.list(params, identity.client.id),
  }),
  balance_get_total: clientAction({
    params: Type.Object({}),
    summary: "The caller's balance (the sum of its lines) as a decimal string in the client's currency",
    result: Money,
    handler: (_params, { services, identity }) => services.credits.total(identity.client.id),
  }),
};
