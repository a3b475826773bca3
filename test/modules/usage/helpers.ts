// Shared steps of the usage tests: an apikey plan, a bought order whose plan carries meters, and events.
import { expect } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { buyKey, createPlan } from '../../helpers/apikey.ts';

/** The meters the tests' plan declares, as the product config's `meters` holds them (issue 23, item 1). */
export const TEST_METERS = [
  { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' },
  { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count' },
  { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user' },
  { code: 'peak', name: 'Peak', unit: 'request/s', aggregation: 'max' },
  { code: 'seats', name: 'Seats', unit: 'seat', aggregation: 'latest' },
];

/**
 * An active order with a key whose plan carries `meters`. Written straight into the key's options (where ingestion
 * and the close read the plan in force), so a test can also plant meters the product's validation would refuse.
 */
export async function meteredOrder(t: TestApp, clientId: number, meters: unknown = TEST_METERS): Promise<{ orderId: number; key: string; keyId: number }> {
  const plan = await createPlan(t, { custom: { tier: 'ai' } });
  const { orderId, key, keyId } = await buyKey(t, plan, clientId);
  const row = await t.services.db.selectFrom('api_keys').select('options').where('id', '=', keyId).executeTakeFirstOrThrow();
  const options = { ...(JSON.parse(row.options) as Record<string, unknown>), meters };
  await t.services.db.updateTable('api_keys').set({ options: JSON.stringify(options) }).where('order_id', '=', orderId).execute();
  return { orderId, key, keyId };
}

export interface IngestAnswer {
  accepted: number;
  duplicates: number;
  rejected: Array<{ index: number; code: string; message: string }>;
}

export async function ingest(t: TestApp, events: unknown[]): Promise<IngestAnswer> {
  const reply = await t.admin('usage/ingest', { events });
  expect(reply.body.error).toBeNull();
  return reply.result as IngestAnswer;
}

/** The stored events of an order, by id. */
export async function storedEvents(t: TestApp, orderId: number) {
  return t.services.db.selectFrom('usage_events').selectAll().where('order_id', '=', orderId).orderBy('event_id').execute();
}

export const minutesFromNow = (minutes: number): string => new Date(Date.now() + minutes * 60_000).toISOString();
