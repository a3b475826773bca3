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
  const created = await t.admin('staff/create', { email, password, name: 'Verifier', admin_group_id: group.result });
  expect(created.status).toBe(200);
  // Read from the service: a group holding only serviceapikey.check makes a verifier, which cannot log in or read
  // its own profile (issue 20, M3).
  return (await t.services.staff.profile(created.result as number)).api_token;
}

/**
 * Bounds on the calls a per-key rate limit may accept during a run of `runMs` under a load above the limit.
 * Windows start with the first call after the previous one ended, so at most ceil(runMs / windowMs) windows start
 * during the run, and at least floor(runMs / windowMs) of them are complete. `total` counts the calls answered
 * before the run's end: a call sent just before it may be answered in the next window, which starts after the end.
 * The figures per second are for the reader (cutting by wall-clock second splits windows, so they are not asserted
 * one by one).
 */
export function rateLimitRun(accepted: readonly number[], started: number, runMs: number, windowMs = 1000) {
  const perSecond = Array.from({ length: Math.ceil(runMs / 1000) }, (_, i) => accepted.filter((at) => at >= started + i * 1000 && at < started + (i + 1) * 1000).length);
  const total = accepted.filter((at) => at < started + runMs).length;
  return { total, perSecond, mostWindows: Math.ceil(runMs / windowMs), leastWindows: Math.floor(runMs / windowMs) };
}

/**
 * The most a per-key rate limit may accept per window across processes, as docs/api-keys.md ("How far the per-key rate
 * limit can be overshot") documents it: the limit, plus for each process the tenth of the limit it may hold unconfirmed by
 * the shared store (src/modules/serviceapikey/check/key-rate.ts), however slow the round trip. While every process runs
 * smoothly one of those tenths is always inside the limit (measured: limit + (P − 1) tenths); a process frozen for a
 * moment mid-window (descheduled on a busy machine, a paused VM, SIGSTOP) can add its own.
 */
export function documentedMaxPerWindow(limit: number, processes: number): number {
  return limit + processes * Math.ceil(limit / 10);
}
