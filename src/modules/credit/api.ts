// credit: buying credits (issue 24 items 3 and 6). Staff define top-up packs; a client lists and buys them, sets
// auto-recharge (threshold and amount, charged to the saved card) and a low-balance alert. The ledger itself is read
// and written through FOSSBilling's names in the client and invoice modules (balance-actions.ts, invoice-actions.ts).
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { InvalidInput } from '../../lib/invalid-input.ts';
import { formatMoney, parseMoney, precisionOf } from '../../lib/money.ts';
import { Done, Money, Nullable, Timestamp } from '../../platform/schemas.ts';
import type { AutoRecharge } from './auto-recharge.ts';
import type { Packs } from './packs.ts';
import type { Crossings } from './watches.ts';
import type { CreditService } from './service.ts';
import type { Selling } from '../currency/selling.ts';

export interface CreditNeeds {
  /** Packs are priced in the default currency; a client's wallet settings are in the client's currency. */
  selling: Pick<Selling, 'defaultCode'>;
  credits: Pick<CreditService, 'currencyOf'>;
  creditPacks: Pick<Packs, 'list' | 'get' | 'create' | 'update' | 'delete' | 'buy'>;
  autoRecharge: Pick<AutoRecharge, 'get' | 'set'>;
  crossings: Pick<Crossings, 'alertAmount' | 'setAlert'>;
}

const { adminAction, clientAction } = actionsFor<CreditNeeds>();

const PERMISSION = 'credit.manage_packs';
const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Amount = Type.Union([Type.String({ maxLength: 40 }), Type.Number()]);
const Title = Type.String({ minLength: 1, maxLength: 100 });
const BonusDays = Nullable(Type.Integer({ minimum: 1, maximum: 3650, description: 'The bonus expires this many days after the payment; null: never' }));

const Pack = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  amount: Money,
  bonus: Money,
  bonus_days: Nullable(Type.Integer()),
  currency: Type.String(),
  enabled: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const AutoRechargeResult = Type.Object({
  enabled: Type.Boolean(),
  threshold: Nullable(Money),
  amount: Nullable(Money),
  currency: Type.String(),
  has_card: Type.Boolean({ description: 'Whether a saved card is there to charge' }),
});

const LowBalance = Type.Object({ amount: Nullable(Money), currency: Type.String() });

/** A positive amount in `currency` as minor units (a sign, 0, or too many decimals → 422). */
function positive(value: string | number, param: string, currency: string): number {
  if ((typeof value === 'string' && value.trim().startsWith('-')) || (typeof value === 'number' && value < 0)) throw new InvalidInput(param, 'must be more than 0');
  const minor = parseMoney(value, param, precisionOf(currency));
  if (minor <= 0) throw new InvalidInput(param, 'must be more than 0');
  return minor;
}

/** Like `positive`, but 0 is allowed (a pack without a bonus). */
function bonusOf(value: string | number, currency: string): number {
  if ((typeof value === 'string' && value.trim().startsWith('-')) || (typeof value === 'number' && value < 0)) throw new InvalidInput('bonus', 'must not be negative');
  return parseMoney(value, 'bonus', precisionOf(currency));
}

export const creditApi: ModuleApi<CreditNeeds> = {
  name: 'credit',
  admin: {
    pack_get_list: adminAction({
      params: Type.Object({}),
      permission: PERMISSION,
      summary: 'Every top-up pack, enabled or not, smallest amount first',
      result: Type.Object({ list: Type.Array(Pack) }),
      handler: async (_params, { services }) => ({ list: await services.creditPacks.list(null) }),
    }),
    pack_get: adminAction({
      params: Type.Object({ id: Id }),
      permission: PERMISSION,
      summary: 'One top-up pack; 404 for an unknown id',
      result: Pack,
      handler: ({ id }, { services }) => services.creditPacks.get(id),
    }),
    pack_create: adminAction({
      params: Type.Object({ title: Title, amount: Amount, bonus: Type.Optional(Amount), bonus_days: Type.Optional(BonusDays), enabled: Type.Optional(Type.Boolean()) }),
      permission: PERMISSION,
      summary:
        'A top-up pack clients can buy: `amount` is credited as a paid top-up, `bonus` (default 0) beside it as promotional credit that expires `bonus_days` after the payment (never when null). Returns the id; 422 for an amount of 0 or less, a negative bonus, too many decimals, or bonus_days without a bonus',
      result: Type.Integer({ description: 'The pack id' }),
      handler: async (params, { services }) => {
        // Packs are priced in the default currency; a client buys them in theirs, converted.
        const currency = await services.selling.defaultCode();
        return services.creditPacks.create({
          title: params.title,
          amount: positive(params.amount, 'amount', currency),
          bonus: params.bonus === undefined ? 0 : bonusOf(params.bonus, currency),
          bonusDays: params.bonus_days ?? null,
          enabled: params.enabled ?? true,
        });
      },
    }),
    pack_update: adminAction({
      params: Type.Object({ id: Id, title: Type.Optional(Title), amount: Type.Optional(Amount), bonus: Type.Optional(Amount), bonus_days: Type.Optional(BonusDays), enabled: Type.Optional(Type.Boolean()) }),
      permission: PERMISSION,
      summary: 'Changes the given fields of a pack; invoices issued for it before keep the pack as it was. 404 for an unknown id',
      result: Done,
      async handler(params, { services }) {
        const currency = await services.selling.defaultCode();
        await services.creditPacks.update(params.id, {
          ...(params.title !== undefined && { title: params.title }),
          ...(params.amount !== undefined && { amount: positive(params.amount, 'amount', currency) }),
          ...(params.bonus !== undefined && { bonus: bonusOf(params.bonus, currency) }),
          ...(params.bonus_days !== undefined && { bonusDays: params.bonus_days }),
          ...(params.enabled !== undefined && { enabled: params.enabled }),
        });
        return true;
      },
    }),
    pack_delete: adminAction({
      params: Type.Object({ id: Id }),
      permission: PERMISSION,
      summary: 'Deletes a pack; an unpaid invoice issued for it still brings its bonus when paid. 404 for an unknown id',
      result: Done,
      async handler({ id }, { services }) {
        await services.creditPacks.delete(id);
        return true;
      },
    }),
  },
  client: {
    pack_get_list: clientAction({
      params: Type.Object({}),
      summary: 'The enabled top-up packs, smallest amount first',
      result: Type.Object({ list: Type.Array(Pack) }),
      handler: async (_params, { services, identity }) => ({ list: await services.creditPacks.list(identity.client.id) }),
    }),
    pack_buy: clientAction({
      params: Type.Object({ id: Id }),
      summary: "Issues an unpaid top-up invoice for an enabled pack; paying it by any gateway credits the amount and the pack's bonus once. Returns the invoice hash; 404 for an unknown or disabled pack",
      result: Type.String({ description: 'The invoice hash' }),
      handler: ({ id }, { services, identity }) => services.creditPacks.buy(identity.client.id, id),
    }),
    auto_recharge_get: clientAction({
      params: Type.Object({}),
      summary: "The caller's auto-recharge: on or off, the threshold, the amount, and whether a saved card is there to charge",
      result: AutoRechargeResult,
      handler: (_params, { services, identity }) => services.autoRecharge.get(identity.client.id),
    }),
    auto_recharge_set: clientAction({
      params: Type.Object({ enabled: Type.Boolean(), threshold: Type.Optional(Amount), amount: Type.Optional(Amount) }),
      summary:
        'Turns auto-recharge on or off: when a payment from the balance takes it below `threshold`, the saved card is charged `amount` off-session (once per crossing; at once when turned on below it). On needs a saved card (409) and both amounts (kept from before when not given); the amount within funds_min_amount..funds_max_amount (422). Off cancels the charges still pending',
      result: AutoRechargeResult,
      handler: async (params, { services, identity }) => {
        // The client's wallet currency: amounts in its decimals.
        const currency = await services.credits.currencyOf(identity.client.id);
        return services.autoRecharge.set(identity.client.id, {
          enabled: params.enabled,
          threshold: params.threshold === undefined ? null : positive(params.threshold, 'threshold', currency),
          amount: params.amount === undefined ? null : positive(params.amount, 'amount', currency),
        });
      },
    }),
    low_balance_get: clientAction({
      params: Type.Object({}),
      summary: "The caller's low-balance alert amount (null: off)",
      result: LowBalance,
      async handler(_params, { services, identity }) {
        const currency = await services.credits.currencyOf(identity.client.id);
        const amount = await services.crossings.alertAmount({ clientId: identity.client.id, currency });
        return { amount: amount === null ? null : formatMoney(amount, precisionOf(currency)), currency };
      },
    }),
    low_balance_set: clientAction({
      params: Type.Object({ amount: Type.Optional(Nullable(Amount)) }),
      summary:
        'Sets the low-balance alert: each time a payment from the balance takes it below `amount`, the `wallet.low_balance` webhook and a mail go out (once per crossing). Without `amount` (or null, or empty) it is off',
      result: LowBalance,
      async handler({ amount }, { services, identity }) {
        const currency = await services.credits.currencyOf(identity.client.id);
        const minor = amount === undefined || amount === null || amount === '' ? null : positive(amount, 'amount', currency);
        await services.crossings.setAlert({ clientId: identity.client.id, currency }, minor);
        return { amount: minor === null ? null : formatMoney(minor, precisionOf(currency)), currency };
      },
    }),
  },
};
