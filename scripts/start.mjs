// `npm start`: runs the compiled server (dist/server/main.mjs) when it was built from the current sources; when it is
// missing or stale (sources edited, dependencies changed), compiles it first (a fraction of a second), and if that
// fails runs the TypeScript sources through tsx. Cluster workers (WORKERS > 1) start through this file too.
import cluster from 'node:cluster';
import { buildServer, serverIsFresh, SERVER_ENTRY } from './server-build.mjs';

let entry = SERVER_ENTRY;
// A worker trusts its primary's decision: the primary built (or found) the compiled server before forking.
if (cluster.isPrimary && !serverIsFresh()) {
  try {
    await buildServer();
  } catch (error) {
    process.stderr.write(`tollgate: could not compile the server, running the TypeScript sources instead: ${String(error)}\n`);
    entry = '';
  }
}
if (entry === '' || process.env.TOLLGATE_RUN_SOURCES === '1') {
  const { register } = await import('tsx/esm/api');
  register();
  // Workers forked from here must take the same road.
  process.env.TOLLGATE_RUN_SOURCES = '1';
  await import('../src/main.ts');
} else {
  await import(entry);
}
