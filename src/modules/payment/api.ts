// payment_method: the client's saved cards (CONTRACT §9): list them, remove one (detached at the provider too).
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { Done } from '../../platform/schemas.ts';
import type { PaymentService } from './service.ts';

/** The services this module's actions use. */
export interface PaymentMethodNeeds {
  payments: Pick<PaymentService, 'listMethods' | 'deleteMethod' | 'startSetup'>;
}

const { clientAction } = actionsFor<PaymentMethodNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });

/** A saved card as the client sees it (PaymentMethodRecord): never the provider's reference. */
const PaymentMethod = Type.Object({
  id: Type.Integer(),
  brand: Type.String(),
  last4: Type.String(),
  exp_month: Type.Integer(),
  exp_year: Type.Integer(),
  default: Type.Boolean(),
});

export const paymentMethodApi: ModuleApi<PaymentMethodNeeds> = {
  name: 'payment_method',
  client: {
    get_list: clientAction({
      params: Type.Object({}),
      summary: 'Saved cards: [{id, brand, last4, exp_month, exp_year, default}]; the default one pays renewals',
      result: Type.Array(PaymentMethod),
      handler: (_params, { services, identity }) => services.payments.listMethods(identity.client.id),
    }),
    setup: clientAction({
      params: Type.Object({
        return_to: Type.Optional(
          Type.Union([Type.Literal('profile'), Type.Literal('orders')], { description: 'The client-area page to come back to: `profile` (default) or `orders` (a free trial waiting for a card)' }),
        ),
      }),
      summary:
        "Saves a card without a payment: `{redirect_url}` of Stripe Checkout in setup mode. The card is stored when Stripe reports it, and starts the client's free trials waiting for a card; 409 when no card gateway is configured",
      result: Type.Object({ redirect_url: Type.String() }),
      handler: ({ return_to }, { services, identity }) => services.payments.startSetup(identity.client.id, `/${return_to ?? 'profile'}`),
    }),
    delete: clientAction({
      params: Type.Object({ id: Id }),
      summary: 'Removes a saved card (detached at the provider first)',
      result: Done,
      async handler({ id }, { services, identity }) {
        await services.payments.deleteMethod(identity.client.id, id);
        return true;
      },
    }),
  },
};
