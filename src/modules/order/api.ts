// order: staff create orders and run the status machine; clients read their own orders and serve themselves.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { hasPermission } from '../../platform/identity.ts';
import { searchParams } from '../../platform/list-filters.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { Done, PageOf } from '../../platform/schemas.ts';
import { AdminOrder, AdminOrderService, Order, OrderHistoryEntry, OrderService, PlanChange, StaffOrderPage, UpgradableProduct } from './results.ts';
import type { OrderPlacing } from './placing.ts';
import type { SelfService } from './self-service.ts';
import type { OrderService as Orders } from './service.ts';
import type { Transition } from './types.ts';
import type { TrialJobs } from '../cron/trials.ts';

/** The services the order module's actions use. */
export interface OrderNeeds {
  orders: Pick<Orders, 'change' | 'delete' | 'update' | 'get' | 'list' | 'service' | 'history'>;
  /** Staff end or extend a running free trial (cron/trials.ts: ending one is the scheduler's job, done now). */
  trialJobs: Pick<TrialJobs, 'endNow' | 'extend'>;
  orderPlacing: Pick<OrderPlacing, 'adminCreate'>;
  selfService: Pick<SelfService, 'cancel' | 'uncancel' | 'upgradables' | 'changePlan'>;
}

const { adminAction, clientAction } = actionsFor<OrderNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Money = Type.Union([Type.String({ maxLength: 32 }), Type.Number()]);
const Reason = Type.String({ maxLength: 255 });
const Status = Type.Union(
  ['pending_setup', 'failed_setup', 'active', 'suspended', 'canceled'].map((status) => Type.Literal(status as 'active')),
);
const ById = Type.Object({ id: Id });

function transitionAction(action: Transition, summary: string, withReason = false) {
  return adminAction({
    params: withReason ? Type.Object({ id: Id, reason: Type.Optional(Reason) }) : ById,
    permission: 'order.manage',
    summary,
    result: Done,
    async handler(params: { id: number; reason?: string }, { services }) {
      await services.orders.change(params.id, action, { reason: params.reason });
      return true;
    },
  });
}

export const orderApi: ModuleApi<OrderNeeds> = {
  name: 'order',
  admin: {
    create: adminAction({
      params: Type.Object({
        client_id: Id,
        product_id: Id,
        period: Type.Optional(Type.String({ minLength: 1, maxLength: 8 })),
        quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        price: Type.Optional(Money),
        activate: Type.Optional(Type.Boolean()),
        invoice_option: Type.Optional(Type.Union([Type.Literal('no-invoice'), Type.Literal('issue-invoice')])),
      }),
      permission: 'order.manage',
      summary: 'Creates an order for a client, optionally activated and/or invoiced',
      result: Type.Integer({ description: 'The new order id' }),
      handler: (params, { services }) => services.orderPlacing.adminCreate(params),
    }),
    activate: transitionAction('activate', 'pending_setup or failed_setup → active; sets expires_at for recurrent orders'),
    renew: transitionAction('renew', 'Extends expires_at by one period from the current expiry (or from now if passed)'),
    suspend: transitionAction('suspend', 'active → suspended', true),
    unsuspend: transitionAction('unsuspend', 'suspended → active'),
    cancel: transitionAction('cancel', '→ canceled', true),
    uncancel: transitionAction('uncancel', 'canceled → active (or pending_setup if never activated)'),
    trial_end: adminAction({
      params: ById,
      permission: 'order.manage',
      summary:
        "Ends the order's running free trial now, as the scheduler would at its end: the first invoice is issued and charged to a saved card, or the order is suspended (TRIAL_ENDED). 409 when the order is not on a running trial",
      result: Done,
      async handler({ id }, { services }) {
        await services.trialJobs.endNow(id);
        return true;
      },
    }),
    trial_extend: adminAction({
      params: Type.Object({ id: Id, days: Type.Integer({ minimum: 1, maximum: 365, description: 'Days added to the trial, 1 to 365' }) }),
      permission: 'order.manage',
      summary: "Moves the running free trial's end (and expires_at) `days` days later; the reminder goes out again before the new end. 409 when the order is not on a running trial",
      result: Type.String({ format: 'date-time', description: 'The new end of the trial' }),
      handler: ({ id, days }, { services }) => services.trialJobs.extend(id, days),
    }),
    delete: adminAction({
      params: ById,
      permission: 'order.manage',
      summary: 'Deletes an order with its history (and its API key)',
      result: Done,
      async handler({ id }, { services }) {
        await services.orders.delete(id);
        return true;
      },
    }),
    update: adminAction({
      params: Type.Object({
        id: Id,
        expires_at: Type.Optional(Type.String({ minLength: 10, maxLength: 40 })),
        period: Type.Optional(Type.String({ minLength: 1, maxLength: 8 })),
        price: Type.Optional(Money),
        notes: Type.Optional(Type.String({ maxLength: 10_000 })),
      }),
      permission: 'order.manage',
      summary: "Changes an order's expiry, period, price or staff notes",
      result: Done,
      async handler({ id, ...fields }, { services }) {
        await services.orders.update(id, fields);
        return true;
      },
    }),
    get: adminAction({
      params: ById,
      permission: 'order.view',
      summary: 'One order, with staff notes',
      result: AdminOrder,
      handler: ({ id }, { services }) => services.orders.get(id),
    }),
    get_list: adminAction({
      params: Type.Object({
        status: Type.Optional(Status),
        client_id: Type.Optional(Id),
        product_id: Type.Optional(Id),
        type: Type.Optional(Type.String({ maxLength: 32 })),
        ...searchParams,
        ...paginationParams,
      }),
      permission: 'order.view',
      summary:
        "Orders, newest first; `search` matches the client's e-mail or name, the order's title, or (digits) the order id; `date_from`/`date_to` (YYYY-MM-DD, inclusive) bound created_at; each order carries client_email and client_name",
      result: StaffOrderPage,
      handler: (params, { services }) => services.orders.list(params),
    }),
    service: adminAction({
      params: ById,
      permission: 'order.view',
      summary: "The order with its product type's service fields (the API key itself needs serviceapikey.manage)",
      result: AdminOrderService,
      async handler({ id }, { services, identity }) {
        const service = await services.orders.service(id);
        // order.view lets support staff read orders; the key is a secret, shown only to those who manage keys.
        if ('api_key' in service && !hasPermission(identity.staff, 'serviceapikey.manage')) return { ...service, api_key: null };
        return service;
      },
    }),
    history: adminAction({
      params: ById,
      permission: 'order.view',
      summary: "The order's status changes, oldest first",
      result: Type.Array(OrderHistoryEntry),
      handler: ({ id }, { services }) => services.orders.history(id),
    }),
  },
  client: {
    get_list: clientAction({
      params: Type.Object({ status: Type.Optional(Status), ...paginationParams }),
      summary: "The caller's orders, newest first",
      result: PageOf(Order),
      handler: (params, { services, identity }) => services.orders.list(params, identity.client.id),
    }),
    get: clientAction({
      params: ById,
      summary: 'One own order',
      result: Order,
      handler: ({ id }, { services, identity }) => services.orders.get(id, identity.client.id),
    }),
    service: clientAction({
      params: ById,
      summary: "An own order with its product type's service fields (an API key order: the key, its parameters and state)",
      result: OrderService,
      handler: ({ id }, { services, identity }) => services.orders.service(id, identity.client.id),
    }),
    cancel: clientAction({
      params: ById,
      summary: 'Cancels at period end: the order stays active until expires_at, then the scheduler cancels it',
      result: Done,
      async handler({ id }, { services, identity }) {
        await services.selfService.cancel(id, identity.client.id);
        return true;
      },
    }),
    uncancel: clientAction({
      params: ById,
      summary: 'Takes a cancellation at period end back, before the period ends',
      result: Done,
      async handler({ id }, { services, identity }) {
        await services.selfService.uncancel(id, identity.client.id);
        return true;
      },
    }),
    upgradables: clientAction({
      params: ById,
      summary: 'Products of the same type the order can move to',
      result: Type.Array(UpgradableProduct),
      handler: ({ id }, { services, identity }) => services.selfService.upgradables(id, identity.client.id),
    }),
    change_plan: clientAction({
      params: Type.Object({ id: Id, product_id: Id, period: Type.String({ minLength: 1, maxLength: 8 }) }),
      summary:
        'Upgrade now with an invoice crediting what was paid for the unused period (applies when paid; void at the end of the period), or downgrade at the next renewal; the API key stays the same',
      result: PlanChange,
      handler: ({ id, ...target }, { services, identity }) => services.selfService.changePlan(id, identity.client.id, target),
    }),
  },
};
