// The events a webhook endpoint can subscribe to, each emitted by listening to the service event of the module that
// owns the change, inside that change's transaction. The data is the event's own fields in snake_case (ids, status,
// amounts in minor units); receivers read anything else through the API. No service event carries a key or a token.
import type { EventName, TollgateEvents } from '../../platform/events.ts';
// The declarations of the events listened to live with their owners.
import '../order/events.ts';
import '../invoice/events.ts';
import '../payment/events.ts';
import '../serviceapikey/events.ts';
import '../client/events.ts';
import '../credit/events.ts';
import { TEST_EVENT, WEBHOOK_EVENT_TYPES } from './event-types.ts';

/** Each subscribable type is the service event of the same name (checked here). */
export const WEBHOOK_EVENTS = WEBHOOK_EVENT_TYPES satisfies readonly EventName[];

export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

export { TEST_EVENT };

/** Field names that must never leave in a webhook, whatever an event grows to carry later. */
const SECRET_FIELD = /key$|token|secret|password|hash/i;

/** `{orderId: 1, clientId: 2}` → `{order_id: 1, client_id: 2}`, without any field that could hold a credential. */
export function dataOf(payload: TollgateEvents[WebhookEventType]): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(payload)) {
    if (SECRET_FIELD.test(name)) continue;
    data[name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)] = value;
  }
  return data;
}
