// The PostgreSQL driver, loaded when PostgreSQL is used: a SQLite install never pays for reading it at start (pg's
// first load also pulls in Node's fetch implementation, ~100 ms of the cold start measured in issue 13). Loaded with
// a require of its own, so the compiled server (scripts/server-build.mjs) leaves it out of the bundle.
import { createRequire } from 'node:module';
import type pgModule from 'pg';

let loaded: typeof pgModule | null = null;

export function loadPg(): typeof pgModule {
  loaded ??= createRequire(import.meta.url)('pg') as typeof pgModule;
  return loaded;
}
