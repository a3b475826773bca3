// WORKERS=n (CONTRACT §13): the primary prepares the instance once (migrations, first administrator, browser UI),
// then forks n workers that all run src/main.ts and share one listening port (node:cluster hands connections out
// round-robin). It replaces a worker that dies, relays key-change messages between workers (SQLite has no
// LISTEN/NOTIFY), and holds the shared rate-limit counters when there is no Redis. It serves no request itself.
import cluster, { type Worker } from 'node:cluster';
import { bootstrap } from './bootstrap.ts';
import type { Config } from './config.ts';
import { ensureWebBuilt } from './http/web-build.ts';
import { PrimaryCounters } from './platform/counters/cluster.ts';
import { isClusterMessage } from './platform/cluster-messages.ts';

/** The env variable telling a worker its slot (1…n); slot 1 runs the in-process scheduler. */
export const WORKER_SLOT_ENV = 'TOLLGATE_WORKER_SLOT';

export function isClusterPrimary(config: Config): boolean {
  return config.workers > 1 && cluster.isPrimary;
}

/** Whether this process runs the background tasks (scheduler…): a lone server, or the first worker of a cluster. */
export function runsBackgroundTasks(): boolean {
  return !cluster.isWorker || process.env[WORKER_SLOT_ENV] === '1';
}

function log(message: string): void {
  process.stdout.write(`${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, msg: message })}\n`);
}

/** Never returns: the process lives for its workers and exits once they have shut down. */
export async function runPrimary(config: Config, printFirstAdmin: (services: Awaited<ReturnType<typeof bootstrap>>) => Promise<void>): Promise<never> {
  const services = await bootstrap(config);
  await printFirstAdmin(services);
  await services.close();
  await ensureWebBuilt();

  const counters = new PrimaryCounters();
  const slots = new Map<Worker, number>();
  /** Recent start times per slot, to stop re-forking a worker that dies at once, again and again. */
  const starts = new Map<number, number[]>();
  let closing = false;

  function fork(slot: number): void {
    const worker = cluster.fork({ [WORKER_SLOT_ENV]: String(slot) });
    slots.set(worker, slot);
    const recent = (starts.get(slot) ?? []).filter((at) => at > Date.now() - 10_000);
    recent.push(Date.now());
    starts.set(slot, recent);
    worker.on('message', (message: unknown) => {
      if (!isClusterMessage(message)) return;
      if (message.t === 'tollgate:counters') counters.answer(worker, message);
      else if (message.t === 'tollgate:invalidate') {
        for (const other of slots.keys()) if (other !== worker && other.isConnected()) other.send(message);
      }
    });
  }

  cluster.on('exit', (worker, code, signal) => {
    const slot = slots.get(worker);
    slots.delete(worker);
    if (slot === undefined) return;
    if (closing) {
      if (slots.size === 0) {
        counters.close();
        process.exit(0);
      }
      return;
    }
    const crashLooping = (starts.get(slot)?.length ?? 0) >= 5;
    log(`worker ${slot} (pid ${worker.process.pid}) exited (${signal ?? code}); ${crashLooping ? 'restarting in 5 s' : 'restarting'}`);
    setTimeout(() => {
      if (!closing) fork(slot);
    }, crashLooping ? 5000 : 0);
  });

  function shutdown(signal: NodeJS.Signals): void {
    if (closing) return;
    closing = true;
    log(`shutting down ${slots.size} workers (${signal})`);
    if (slots.size === 0) process.exit(0);
    for (const worker of slots.keys()) worker.process.kill('SIGTERM');
    // A worker that does not finish within 15 s is stopped.
    setTimeout(() => {
      for (const worker of slots.keys()) worker.process.kill('SIGKILL');
    }, 15_000).unref();
  }
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  for (let slot = 1; slot <= config.workers; slot++) fork(slot);
  log(`primary ${process.pid} started ${config.workers} workers on port ${config.port}`);
  return new Promise<never>(() => undefined);
}
