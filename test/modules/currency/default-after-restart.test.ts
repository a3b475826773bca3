// The default currency staff chose with set_default is the one a process formats amounts in from its next start, on
// the same database, whatever the CURRENCY setting says (it names only the first default): a process started after
// set_default JPY reads and shows plan prices in yen, with no decimals. SQLite file (the restart reopens it).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestApp } from '../../helpers/app.ts';

describe('the default currency across a restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-default-currency-'));
  // The same instance secret for both starts, as a restarted instance has.
  const env = { DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`, CURRENCY: 'USD', TOLLGATE_SECRET: randomBytes(32).toString('hex') };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('formats in the stored default, not in CURRENCY, after set_default', async () => {
    const first = await createTestApp(env);
    expect(first.services.config.currency).toBe('USD');
    expect((await first.admin('currency/create', { code: 'JPY', conversion_rate: '150' })).result).toBe('JPY');
    expect((await first.admin('currency/set_default', { code: 'JPY' })).result).toBe(true);
    await first.close();

    const again = await createTestApp(env);
    // The administrator the first start created, with the token it was given then.
    const admin = (path: string, params: Record<string, unknown>) => again.call(`/api/admin/${path}`, params, { basic: ['admin', first.adminToken] });
    try {
      expect(again.services.config.currency).toBe('JPY');
      const id = (await admin('product/prepare', { title: 'Plan', type: 'custom' })).result as number;
      const pricing = (price: string) => ({ type: 'once', once: { price, setup: '0' } });
      // Yen have no minor unit: a price with decimals is refused, a whole one is kept as written.
      const refused = (await admin('product/update', { id, pricing: pricing('1500.50') })).body.error;
      expect(refused?.code).toBe(422);
      expect((await admin('product/update', { id, pricing: pricing('1500') })).body.error).toBeNull();
      expect((await admin('product/get', { id })).result.pricing.once).toEqual({ price: '1500', setup: '0' });
    } finally {
      await again.close();
    }
  });
});
