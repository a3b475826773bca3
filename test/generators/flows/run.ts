// Runs each generated client's purchase flow against the server named in TOLLGATE_URL and prints the outcomes as
// one JSON line (test/http/openapi-generators.test.ts reads it).
import { purchase as heyApi } from './hey-api.ts';
import { purchase as openapiFetch } from './openapi-fetch.ts';
import { purchase as orval } from './orval.ts';
import type { FlowInput } from './shared.ts';

const input: FlowInput = {
  baseUrl: process.env.TOLLGATE_URL ?? '',
  clientToken: process.env.TOLLGATE_CLIENT_TOKEN ?? '',
  adminToken: process.env.TOLLGATE_ADMIN_TOKEN ?? '',
};
const outcomes = { 'openapi-fetch': await openapiFetch(input), 'hey-api': await heyApi(input), orval: await orval(input) };
process.stdout.write(`${JSON.stringify(outcomes)}\n`);
