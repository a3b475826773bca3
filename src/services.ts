// The composition root: builds every service once, handing each its database handle and the narrow parts of its
// neighbours it needs. Actions reach services through `call.services`.
import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import type { DatabaseHandle, DialectName } from './db/database.ts';
import type { Database } from './db/schema.ts';
import { EventBus } from './events.ts';
import { MemoryCounterStore, RedisCounterStore } from './http/counter-store.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { createSecretBox, type SecretBox } from './lib/crypto.ts';
import { createClientService, type ClientService } from './modules/client/service.ts';
import { createSessionService, type SessionService } from './modules/session/service.ts';
import { createStaffService, type StaffService } from './modules/staff/service.ts';

export interface Services {
  config: Config;
  db: Kysely<Database>;
  dialect: DialectName;
  secrets: SecretBox;
  events: EventBus;
  limiter: RateLimiter;
  sessions: SessionService;
  staff: StaffService;
  clients: ClientService;
  /** Started by the server process only (the in-process scheduler…); tests and the CLI never start them. */
  startTasks: Array<() => void>;
  /** Called on shutdown, in reverse order of registration (flush counters, close connections…). */
  onClose(task: () => Promise<void>): void;
  close(): Promise<void>;
}

export function createServices(config: Config, database: DatabaseHandle, instanceSecret: string): Services {
  const { db } = database;
  const secrets = createSecretBox(instanceSecret);
  const events = new EventBus();
  const closers: Array<() => Promise<void>> = [];

  const counterStore =
    config.redisUrl === null ? new MemoryCounterStore() : new RedisCounterStore(config.redisUrl, config.rateLimit.redisPrefix);
  closers.push(() => counterStore.close());
  const limiter = new RateLimiter(config.rateLimit, counterStore);

  const sessions = createSessionService({ db, secrets, ttlSeconds: config.sessionTtlSeconds });
  const staff = createStaffService({ db, secrets, sessions });
  const clients = createClientService({ db, secrets, events, sessions, defaultCurrency: config.currency });

  return {
    config,
    db,
    dialect: database.dialect,
    secrets,
    events,
    limiter,
    sessions,
    staff,
    clients,
    startTasks: [],
    onClose(task) {
      closers.push(task);
    },
    async close() {
      for (const task of closers.toReversed()) await task();
    },
  };
}
