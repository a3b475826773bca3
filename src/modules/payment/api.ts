// payment_method: the client's saved cards (CONTRACT §9): list them, remove one (detached at the provider too).
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { Done } from '../../platform/schemas.ts';
import type { PaymentService } from './service.ts';

/** The services this module's actions use. */
export interface PaymentMethodNeeds {
  payments: Pick<PaymentService, 'listMethods' | 'deleteMethod'>;
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
