// A real child process running the outbox sender (test/processes/outbox-sender.ts) against the test app's database, for the
// crash tests: they SIGKILL it mid-send and start another. `extraEnv` adds what the deliveries need (an SMTP server,
// private webhook receivers).
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { TestApp } from './app.ts';

export class SenderProcesses {
  private readonly children: ChildProcess[] = [];

  constructor(private readonly leaseSeconds: number) {}

  /** Starts a sender and resolves once it says it is sending. */
  start(t: TestApp, extraEnv: Record<string, string>): Promise<ChildProcess> {
    const config = t.services.config;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: config.databaseUrl,
      TOLLGATE_SECRET: config.secret ?? '',
      REDIS_URL: config.redisUrl ?? '',
      RATE_LIMIT_REDIS_PREFIX: config.rateLimit.redisPrefix,
      PUBLIC_URL: config.publicUrl,
      OUTBOX_POLL_MS: '100',
      OUTBOX_LEASE_SECONDS: String(this.leaseSeconds),
      SCHEDULER: 'off',
      LOG_LEVEL: 'warn',
      DATA_DIR: '/tmp/tollgate-test',
      ...extraEnv,
    };
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/processes/outbox-sender.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    this.children.push(child);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the sender did not start within 30 s')), 30_000);
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (line === 'sending') {
          clearTimeout(timer);
          resolve(child);
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the sender exited early (${code ?? signal})`));
      });
    });
  }

  /** Sends `signal` and resolves once the sender has exited (at once when it already has). */
  stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  }

  /** Kills every sender still running (afterAll). */
  killAll(): void {
    for (const child of this.children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
