// The API key follows its order's plan (CONTRACT §8 change_plan): when an order moves to another plan, its key stays
// the same and takes the new plan's custom parameters, in the same transaction as the change.
import type { EventBus } from '../../platform/events.ts';
import type { ApiKeyService } from './service.ts';

export function followPlanChanges(events: EventBus, keys: Pick<ApiKeyService, 'planChanged'>): void {
  events.on('order.plan_changed', ({ orderId, config }, trx) => keys.planChanged(trx, orderId, config));
  // A free trial ended: the keys leave the trial's included units for the plan's (issue 24 item 7).
  events.on('order.trial_ended', ({ orderId, config }, trx) => keys.planChanged(trx, orderId, config));
}
