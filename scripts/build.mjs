// `npm run build` (and `prepare`, so `npm install` leaves a ready checkout): the browser UI into web/dist and the
// compiled server into dist/server. A failed build is reported, not fatal: `npm start` then builds the UI itself and
// runs the TypeScript sources.
import { buildServer } from './server-build.mjs';

let failed = false;
try {
  await buildServer();
  process.stdout.write('tollgate: compiled the server into dist/server/main.mjs\n');
} catch (error) {
  failed = true;
  process.stderr.write(`tollgate: could not compile the server (npm start will run the sources): ${String(error)}\n`);
}
try {
  const { register } = await import('tsx/esm/api');
  register();
  const { ensureWebBuilt } = await import('../src/http/web-build.ts');
  await ensureWebBuilt();
  process.stdout.write('tollgate: the browser UI is built in web/dist\n');
} catch (error) {
  failed = true;
  process.stderr.write(`tollgate: could not build the browser UI (npm start will try again): ${String(error)}\n`);
}
process.exitCode = failed && process.argv.includes('--strict') ? 1 : 0;
