// The serviceapikey actions of usage alerts (issue 23 item 7): a client adds their own alert percentages per meter of
// their order (`alerts_set`) and reads them beside the plan's (`alerts_get`); staff do the same for any order. Kept
// apart from api.ts, which spreads them into its roles; the logic is usage/client-alerts.ts.
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import type { ApiKeyService } from './service.ts';

/** The services these actions use (api.ts names them in ApiKeyNeeds too, so services.ts proves they are built). */
export interface AlertNeeds {
  apikeys: Pick<ApiKeyService, 'getAlerts' | 'setAlerts'>;
}

const { adminAction, clientAction } = actionsFor<AlertNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Percentages = Type.Array(Type.Integer({ minimum: 1, maximum: 100 }), {
  maxItems: 10,
  description: "Whole percentages of the meter's included units, 1–100, at most ten, none repeated; [] removes the client's own",
});
const GetParams = Type.Object({ order_id: Id });
const SetParams = Type.Object({
  order_id: Id,
  meter: Type.String({ minLength: 1, maxLength: 40, description: "A meter code of the order's plan; `calls` is the built-in meter" }),
  percentages: Percentages,
});

const OrderAlertsResult = Type.Object({
  order_id: Type.Integer(),
  meters: Type.Array(
    Type.Object({
      meter: Type.String(),
      name: Type.String(),
      unit: Type.String(),
      included: Type.Union([Type.Integer(), Type.Null()], { description: 'Units included per period; null: unlimited (no alert is ever sent)' }),
      plan: Type.Array(Type.Integer(), { description: "The plan's alert percentages" }),
      client: Type.Array(Type.Integer(), { description: "The client's own, sent in addition to the plan's" }),
    }),
  ),
});

export const alertActions = {
  admin: {
    alerts_get: adminAction({
      params: GetParams,
      permission: 'serviceapikey.manage',
      summary: "Every meter of an order's plan with its alert percentages: the plan's and the client's own",
      result: OrderAlertsResult,
      handler: ({ order_id }, { services }) => services.apikeys.getAlerts(order_id),
    }),
    alerts_set: adminAction({
      params: SetParams,
      permission: 'serviceapikey.manage',
      summary: "Replace the client's own alert percentages of one meter of an order (sent in addition to the plan's, each once per period)",
      result: OrderAlertsResult,
      handler: (params, { services }) => services.apikeys.setAlerts(params),
    }),
  },
  client: {
    alerts_get: clientAction({
      params: GetParams,
      summary: "Every meter of your order's plan with its alert percentages: the plan's and your own",
      result: OrderAlertsResult,
      handler: ({ order_id }, { services, identity }) => services.apikeys.getAlerts(order_id, identity.client.id),
    }),
    alerts_set: clientAction({
      params: SetParams,
      summary: 'Add your own alert percentages to one meter of your order (webhook and mail at each, once per period); [] removes them',
      result: OrderAlertsResult,
      handler: (params, { services, identity }) => services.apikeys.setAlerts(params, identity.client.id),
    }),
  },
};
