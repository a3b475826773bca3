// Shared steps of the usage tests: an apikey plan, a bought order whose plan carries meters, and events.
import { expect } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { buyKey, createPlan } from '../../helpers/apikey.ts';

/** The meters the tests' plan declares, as the product config's `meters` holds them (issue 23, item 1). */
export const TEST_METERS = [
  { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' },
  { code: 'requests', name: 'Requests', aggregation: 'count' },
  { code: 'users', name: 'Users', aggregation: 'unique_count', property: 'user' },
  { code: 'peak', name: 'Peak', aggregation: 'max' },
  { code: 'seats', name: 'Seats', aggregation: 'latest' },
];

/**
 * An active order with a key, whose plan snapshot (the order's config) carries `meters`. Written straight into the
 * order's config: the product module's validation of `meters` is built beside this piece, and ingestion reads the
 * order's snapshot either way.
 */
export async function meteredOrder(t: TestApp, clientId: number, meters: unknown = TEST_METERS): Promise<{ orderId: number; key: string }> {
  const plan = await createPlan(t, { custom: { tier: 'ai' } });
  const { orderId, key } = await buyKey(t, plan, clientId);
  const row = await t.services.db.selectFrom('orders').select('config').where('id', '=', orderId).executeTakeFirstOrThrow();
  const config = { ...(JSON.parse(row.config) as Record<string, unknown>), meters };
  await t.services.db.updateTable('orders').set({ config: JSON.stringify(config) }).where('id', '=', orderId).execute();
  return { orderId, key };
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
