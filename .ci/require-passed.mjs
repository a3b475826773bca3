// Fails CI unless every named test suite ran and passed in a Vitest JSON report. Suites that need a service
// (PostgreSQL, Redis) skip themselves silently where it is absent; on the run that provides it, a skip means a
// broken set-up that would hide them, so it must fail the run.
// Usage: node .ci/require-passed.mjs <vitest-report.json> '<top-level describe title>'...
import { readFileSync } from 'node:fs';

const [reportPath, ...suites] = process.argv.slice(2);
if (reportPath === undefined || suites.length === 0) {
  console.error('usage: node .ci/require-passed.mjs <vitest-report.json> <suite title>...');
  process.exit(2);
}

let report;
try {
  report = JSON.parse(readFileSync(reportPath, 'utf8'));
} catch (error) {
  console.error(`require-passed: cannot read the Vitest report ${reportPath}: ${error.message}`);
  process.exit(1);
}

const tests = (report.testResults ?? []).flatMap((file) => file.assertionResults ?? []);
let failed = false;
for (const suite of suites) {
  const mine = tests.filter((test) => test.ancestorTitles?.[0] === suite);
  const notPassed = mine.filter((test) => test.status !== 'passed');
  if (mine.length === 0) {
    console.error(`require-passed: no test of "${suite}" in the report (renamed, deleted or filtered out?)`);
    failed = true;
  } else if (notPassed.length > 0) {
    console.error(`require-passed: ${notPassed.length} of ${mine.length} tests of "${suite}" did not pass:`);
    for (const test of notPassed) console.error(`  ${test.status}: ${test.title}`);
    failed = true;
  } else {
    console.log(`require-passed: ${mine.length} tests of "${suite}" passed`);
  }
}
process.exit(failed ? 1 : 0);
