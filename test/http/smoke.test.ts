import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('serves a guest call and an admin call', async () => {
    const periods = await t.call('/api/guest/system/periods', {}, { method: 'GET' });
    expect(periods.status).toBe(200);
    const client = await t.createClient();
    const browser = await t.login('client', client.email, client.password);
    const profile = await t.call('/api/client/profile/get', {}, { browser, csrf: true });
    expect(profile.result.email).toBe(client.email);
  });
});
