// The app of the SDK benchmark, in its own process: an Express route, guarded by the SDK middleware (`guarded`) or
// not (`bare`). Prints `listening <url>`; on SIGTERM closes the SDK (reporting its last uses) and prints
// `answered <n>`, the 2xx answers it sent.
import express from 'express';
import { Tollgate } from '../packages/sdk/src/index.ts';
import { tollgateExpress } from '../packages/sdk/src/express.ts';

const [mode, baseUrl, token] = process.argv.slice(2);
const app = express();
let tollgate: Tollgate | null = null;
if (mode === 'guarded') {
  tollgate = new Tollgate({ baseUrl: baseUrl!, token: token! });
  app.use(tollgateExpress(tollgate));
}
let answered = 0;
app.get('/data', (_req, res) => {
  answered++;
  res.json({ ok: true });
});
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address !== null && typeof address === 'object') process.stdout.write(`listening http://127.0.0.1:${address.port}\n`);
});
process.on('SIGTERM', () => {
  void (async () => {
    server.close();
    await tollgate?.close();
    process.stdout.write(`answered ${answered}\n`);
    process.exit(0);
  })();
});
