// Issue 8 item 7: one attacker behind a shared address must not lock its colleagues out. A valid API token always
// works; failures are still throttled; password guessing is throttled per (address, e-mail), with a looser
// per-address ceiling (API_AUTH_FAILED) that stops spraying many e-mails. Default policies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

describe('login and token throttling (default policies)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true' });
  });
  afterAll(async () => {
    await t.close();
  });

  const login = (kind: 'client' | 'staff', email: string, password: string, ip: string) => t.call(`/api/guest/${kind}/login`, { email, password }, { ip });

  it("an attacker's failed tokens and logins from an address do not stop a valid token from that address", async () => {
    const office = '192.0.2.10';
    const colleague = await t.createClient();
    for (let i = 0; i < 10; i++) expectError(await t.call('/api/client/profile/get', {}, { ip: office, basic: ['client', `guess-${i}`] }), 204, 401);
    for (let i = 0; i < 10; i++) expectError(await login('client', `nobody${i}@example.com`, 'Wrong-Passw0rd1', office), 206, 401);
    // The address is now over API_AUTH_FAILED (20/300): failures get 429 …
    expectError(await t.call('/api/admin/profile/get', {}, { ip: office, basic: ['admin', 'still-guessing'] }), 429);
    expectError(await t.call('/api/client/profile/get', {}, { ip: office, basic: ['client', 'still-guessing'] }), 429);
    // … but valid tokens keep working, every time.
    for (let i = 0; i < 5; i++) {
      const client = await t.call('/api/client/profile/get', {}, { ip: office, basic: ['client', colleague.token] });
      expect(client.status, JSON.stringify(client.body)).toBe(200);
      expect(client.result.id).toBe(colleague.id);
      expect((await t.call('/api/admin/profile/get', {}, { ip: office, basic: ['admin', t.adminToken] })).status).toBe(200);
    }
  });

  it('guessing one e-mail is stopped after 10 attempts (even the right password then); other accounts behind the address log in', async () => {
    const ip = '192.0.2.20';
    const victim = await t.createClient();
    const colleague = await t.createClient();
    for (let i = 0; i < 10; i++) expectError(await login('client', victim.email, `Wrong-Passw0rd${i}`, ip), 206, 401);
    const stopped = await login('client', victim.email, victim.password, ip);
    expectError(stopped, 429);
    expect(stopped.headers['ratelimit-limit']).toBe('10');
    expect(Number(stopped.headers['retry-after'])).toBeGreaterThan(300);
    expectError(await login('client', victim.email.toUpperCase(), victim.password, ip), 429);
    // Not a lock-out of the address: a colleague logs in from it, and the victim from elsewhere.
    expect((await login('client', colleague.email, colleague.password, ip)).status).toBe(200);
    expect((await login('staff', ADMIN_EMAIL, ADMIN_PASSWORD, ip)).status).toBe(200);
    expect((await login('client', victim.email, victim.password, '192.0.2.21')).status).toBe(200);
  });

  it('the per-address ceiling stops spraying many e-mails: 20 failures, then the address is refused', async () => {
    const ip = '192.0.2.30';
    const client = await t.createClient();
    for (let i = 0; i < 20; i++) expectError(await login('client', `spray${i}@example.com`, 'Spring-2026a', ip), 206, 401);
    const refused = await login('client', 'spray-next@example.com', 'Spring-2026a', ip);
    expectError(refused, 429);
    expect(refused.headers['ratelimit-limit']).toBe('20');
    expectError(await login('client', client.email, client.password, ip), 429);
    // A valid token from the same address still works; another address is unaffected.
    expect((await t.call('/api/client/profile/get', {}, { ip, basic: ['client', client.token] })).status).toBe(200);
    expect((await login('client', client.email, client.password, '192.0.2.31')).status).toBe(200);
  });
});
