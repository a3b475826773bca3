// A second Tollgate process for the cross-process tests: the real app (bootstrap + buildApp, without the browser UI)
// listening on a random port of 127.0.0.1, configured from the environment like src/main.ts. Prints
// "listening <url>" once ready; exits cleanly on SIGTERM.
import { buildApp } from '../../src/app.ts';
import { bootstrap } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';

const services = await bootstrap(loadConfig());
const app = buildApp(services);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening ${address}\n`);

async function shutdown(): Promise<void> {
  await app.close();
  await services.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown());
