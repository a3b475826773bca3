// Every migration, in order. Add new ones at the end; never edit one that has shipped.
import type { Migration } from 'kysely';
import * as core from './001_core.ts';

export const migrations: Record<string, Migration> = {
  '001_core': core,
};
