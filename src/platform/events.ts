// One in-process event bus with typed events. The service that owns a change emits it, passing its transaction, so
// listeners that write data do so inside the same transaction: either everything happens or nothing does.
// Each module declares its events by augmenting TollgateEvents:
//   declare module '../../platform/events.ts' { interface TollgateEvents { 'order.activated': { orderId: number } } }
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';

export interface TollgateEvents {
  /** A client logged in or signed up; `previousSessionId` is the guest session it came from, if any. */
  'client.logged_in': { clientId: number; previousSessionId: string | null };
  /** A client account stopped being active (suspended, canceled or deleted). */
  'client.deactivated': { clientId: number };
  /** A suspended or canceled client account became active again. */
  'client.reactivated': { clientId: number };
  'client.deleted': { clientId: number };
}

export type EventName = keyof TollgateEvents;
export type Listener<K extends EventName> = (payload: TollgateEvents[K], trx: Kysely<Database>) => void | Promise<void>;

export class EventBus {
  private readonly listeners = new Map<EventName, Listener<EventName>[]>();

  on<K extends EventName>(name: K, listener: Listener<K>): void {
    const list = this.listeners.get(name) ?? [];
    list.push(listener as Listener<EventName>);
    this.listeners.set(name, list);
  }

  /** Runs the listeners one after another; a listener that throws aborts the emitter's transaction. */
  async emit<K extends EventName>(name: K, payload: TollgateEvents[K], trx: Kysely<Database>): Promise<void> {
    for (const listener of this.listeners.get(name) ?? []) await listener(payload, trx);
  }
}
