// A Tollgate process that only runs the outbox sender (as the server does beside serving requests), configured from
// the environment. For the crash test: it is killed with SIGKILL in the middle of sending and started again.
import { bootstrap } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';

const services = await bootstrap(loadConfig());
services.outbox.start();
// The sender's own timer does not keep a process alive (the server's socket does): without this, a sender with
// nothing left to send would exit by itself before the test stops it.
const keepAlive = setInterval(() => undefined, 60_000);
process.stdout.write('sending\n');

async function shutdown(): Promise<void> {
  clearInterval(keepAlive);
  await services.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown());
