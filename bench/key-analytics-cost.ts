// What key analytics add to each check, in instructions, apart from the check's own noise (issue 25): the hot path's
// counter bump (OutcomeTally.countKey) run `n` times in a loop, with the flush's taking of the tally (and the making of
// its rows, PendingRows.add) every 1,000 calls — about what a process under valgrind does, one check per millisecond
// and one flush per second. Bundled first, so that starting it costs the same few instructions every time (under tsx
// the start-up's own spread hides the loop), then run under callgrind with n = 0 and n = 1,000,000; the difference of
// the totals divided by n is the instructions per counted answer:
//   npx esbuild bench/key-analytics-cost.ts --bundle --platform=node --format=esm --outfile=/tmp/ka.mjs
//   valgrind --tool=callgrind --callgrind-out-file=/tmp/ka.%p node /tmp/ka.mjs 0
//   valgrind --tool=callgrind --callgrind-out-file=/tmp/ka.%p node /tmp/ka.mjs 1000000
// The database write of the flush is not in it: the whole-check count (`npm run bench -- instructions`) holds it.
import { PendingRows } from '../src/modules/serviceapikey/analytics/outcome-writer.ts';
import { OutcomeTally } from '../src/modules/serviceapikey/analytics/tally.ts';

const n = Number(process.argv[2] ?? 0);
const tally = new OutcomeTally();
const start = Date.UTC(2030, 0, 1);
let pending = new PendingRows();
for (let i = 0; i < n; i++) {
  // One check per millisecond on one of eight keys.
  tally.countKey(1 + (i & 7), 'VALID', start + i, '203.0.113.9');
  if (i % 1000 === 999) {
    pending.add(tally.take());
    pending = new PendingRows();
  }
}
process.stdout.write(`${n} answers counted\n`);
