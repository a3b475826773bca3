// A Tollgate process that only runs the outbox sender (as the server does beside serving requests), configured from
// the environment. For the crash test: it is killed with SIGKILL in the middle of sending and started again.
import { bootstrap } from '../src/bootstrap.ts';
import { loadConfig } from '../src/config.ts';

const services = await bootstrap(loadConfig());
services.outbox.start();
process.stdout.write('sending\n');

async function shutdown(): Promise<void> {
  await services.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown());
