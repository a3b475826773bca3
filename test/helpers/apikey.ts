// Shared steps of the API key tests: a plan with a config, a bought (activated) order with its first key, and a
// staff member's API token in a group holding some permissions.
import { expect } from 'vitest';
import type { TestApp } from './app.ts';

export async function createPlan(t: TestApp, config: Record<string, unknown>): Promise<number> {
  const id = (await t.admin('product/prepare', { title: `Plan ${Math.random()}`, type: 'apikey' })).result as number;
  const updated = await t.admin('product/update', { id, status: 'enabled', config });
  expect(updated.body).toEqual({ result: true, error: null });
  return id;
}

/** An activated order of `productId` for the client, with its first key and that key's id. */
export async function buyKey(t: TestApp, productId: number, clientId: number): Promise<{ orderId: number; key: string; keyId: number }> {
  const created = await t.admin('order/create', { client_id: clientId, product_id: productId, activate: true });
  expect(created.status).toBe(200);
  const got = await t.admin('serviceapikey/get', { order_id: created.result });
  return { orderId: created.result as number, key: got.result.api_key as string, keyId: got.result.id as number };
}

/** A staff member in a group holding `permissions`, and their API token. */
export async function staffToken(t: TestApp, permissions: string[]): Promise<string> {
  const group = await t.admin('staff/group_create', { name: `G ${permissions.join(' ')} ${Math.random()}`, permissions });
  const email = `v-${Math.random().toString(36).slice(2)}@example.com`;
  const password = 'Verifier-Passw0rd';
  expect((await t.admin('staff/create', { email, password, name: 'Verifier', admin_group_id: group.result })).status).toBe(200);
  const browser = await t.login('staff', email, password);
  const profile = await t.call('/api/admin/profile/get', {}, { browser, csrf: true });
  return profile.result.api_token as string;
}
