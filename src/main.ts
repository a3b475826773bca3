// Process entry: read config, open and migrate the database, create the first admin if needed, serve.
import { buildApp } from './app.ts';
import { bootstrap, ensureFirstAdmin } from './bootstrap.ts';
import { firstAdminNotice } from './first-admin-notice.ts';
import { isClusterPrimary, runPrimary, runsBackgroundTasks } from './primary.ts';
import { loadConfig } from './config.ts';
import type { Services } from './services.ts';
import { ensureWebBuilt, WEB_DIST_DIR } from './http/web-build.ts';

const config = loadConfig();
// WORKERS > 1: this process becomes the cluster's primary and never gets past this line; its workers run the rest.
if (isClusterPrimary(config)) await runPrimary(config, printFirstAdmin);
const services = await bootstrap(config);
await ensureWebBuilt();
const app = buildApp(services, {
  webDistDir: WEB_DIST_DIR,
  // buildApp logs requests by method, path and address only: never a query string or header (secrets travel there).
  logger: { level: config.logLevel },
});

await printFirstAdmin(services);

// With WORKERS > 1 only the first worker runs the scheduler (src/primary.ts).
if (runsBackgroundTasks()) for (const start of services.startTasks) start();

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down');
  await app.close();
  await services.close();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));

await app.listen({ port: config.port, host: config.host });

async function printFirstAdmin(ready: Services): Promise<void> {
  const firstAdmin = await ensureFirstAdmin(ready);
  if (firstAdmin === null) return;
  // Printed once, to the operator's console, on the very first start only.
  const lines = firstAdminNotice(firstAdmin, {
    publicUrl: ready.config.publicUrl,
    apiTokenGiven: ready.config.admin.apiToken !== null,
  });
  process.stdout.write(`${lines.join('\n')}\n`);
}
