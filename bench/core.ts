// Platform core benchmark: guest/system/periods and an authenticated admin/client/get_list (per_page 100, 10,000
// clients) beside a bare Fastify GET route, all in the same run. Rate limits are on (limits raised so the load is
// not refused: the limiter's work is still measured).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { buildApp } from '../src/app.ts';
import { bootstrap, ensureFirstAdmin } from '../src/bootstrap.ts';
import { loadConfig } from '../src/config.ts';
import { nowIso } from '../src/lib/time.ts';
import { listen, printTable, runLoad, type LoadResult } from './lib.ts';

const ADMIN_TOKEN = 'benchAdminToken0123456789abcdefgh';

export async function runCoreBench(seconds = 5): Promise<LoadResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const services = await bootstrap(
    loadConfig({
      DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`,
      DATA_DIR: dir,
      SCHEDULER: 'off',
      RATE_LIMIT_API_GUEST: '1000000000/60',
      RATE_LIMIT_API_AUTHENTICATED: '1000000000/60',
      TOLLGATE_ADMIN_EMAIL: 'bench@example.com',
      TOLLGATE_ADMIN_PASSWORD: 'Bench-Passw0rd',
      TOLLGATE_ADMIN_API_TOKEN: ADMIN_TOKEN,
    }),
  );
  await ensureFirstAdmin(services);

  process.stdout.write('seeding 10,000 clients…\n');
  const now = nowIso();
  await services.db.transaction().execute(async (trx) => {
    for (let batch = 0; batch < 100; batch++) {
      const rows = Array.from({ length: 100 }, (_, i) => {
        const n = batch * 100 + i;
        const token = `bench-client-token-${n}`;
        return {
          email: `client${n}@example.com`,
          password_hash: null,
          first_name: `First${n}`,
          last_name: `Last${n}`,
          company: n % 3 === 0 ? `Company ${n}` : null,
          phone: null,
          address_1: null,
          address_2: null,
          city: null,
          state: null,
          postcode: null,
          country: 'US',
          currency: 'USD',
          status: 'active' as const,
          api_token_hash: services.secrets.hash(token),
          api_token_enc: services.secrets.encrypt(token),
          created_at: now,
          updated_at: now,
        };
      });
      await trx.insertInto('clients').values(rows).execute();
    }
  });

  const app = buildApp(services);
  const bare = Fastify();
  bare.get('/bare', async () => ({ result: { ok: true }, error: null }));
  const base = await listen(app);
  const bareBase = await listen(bare);
  const auth = { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` };

  try {
    const results: LoadResult[] = [];
    results.push(await runLoad('bare Fastify GET', { url: `${bareBase}/bare`, seconds }));
    results.push(await runLoad('guest/system/periods', { url: `${base}/api/guest/system/periods`, seconds }));
    results.push(
      await runLoad('admin/client/get_list per_page=100 (10k)', {
        url: `${base}/api/admin/client/get_list?per_page=100`,
        headers: auth,
        seconds,
      }),
    );
    printTable('Platform core (10 connections)', results, results[0]);
    return results;
  } finally {
    await app.close();
    await bare.close();
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
