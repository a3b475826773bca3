// Every migration, in order. Add new ones at the end; never edit one that has shipped.
import type { Migration } from 'kysely';
import * as core from './001_core.ts';
import * as selling from './002_selling.ts';
import * as apikey from './003_apikey.ts';
import * as outbox from './008_outbox.ts';
import * as webhooks from './012_webhooks.ts';

export const migrations: Record<string, Migration> = {
  '001_core': core,
  '002_selling': selling,
  '003_apikey': apikey,
  '008_outbox': outbox,
  '012_webhooks': webhooks,
};
