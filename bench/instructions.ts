// The key check counted in instructions, for costs smaller than this VM's noise: a feature that costs 3% cannot be
// told from no cost by requests per second here (an A/A comparison of the defaults against themselves spreads
// ±6%), but the instructions a check executes barely move from one run to the next.
// Each target is Tollgate started as `npm start` starts it (bench/process.ts: same script, default settings, its own
// process) under valgrind's callgrind, which counts every instruction of every thread in user space (system calls'
// kernel work is not counted). After BENCH_WARM checks (JIT, key cache) the counters are zeroed, BENCH_CHECKS checks
// are sent on 4 keep-alive connections, and the counters are dumped: instructions per check. Targets alternate,
// BENCH_ROUNDS times, each in a fresh process.
// Under valgrind the server runs some fifty times slower: about one check per millisecond instead of tens, so work done
// once per millisecond (the access log's time stamp) falls on every check here, and the figure errs towards the cost.
// Needs valgrind (`apt-get install valgrind`); without it this benchmark says so and does nothing.
// Variants (BENCH_VARIANTS, the first is the reference): sqlite (defaults) and access (ACCESS_LOG=true) by default;
// bench/check.ts's other SQLite ones (gateway, ratelimit, warn, workers2, sqlite-again, meters) by name. BENCH_WARM
// and BENCH_CHECKS set the counts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VARIANTS, variantKey } from './check.ts';
import { BASE_PORT, startTollgate } from './process.ts';

const CONNECTIONS = 4;

function hasValgrind(): boolean {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `count` checks of `key`, `CONNECTIONS` at a time on keep-alive connections; throws on any answer but `true`. */
async function sendChecks(url: string, key: string, count: number, agent: http.Agent): Promise<void> {
  const body = JSON.stringify({ key });
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const request = http.request(`${url}/api/guest/serviceapikey/check`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => ((JSON.parse(text) as { result: unknown }).result === true ? resolve() : reject(new Error(`check refused: ${text}`))));
      });
      request.on('error', reject);
      request.end(body);
    });
  let left = count;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (left-- > 0) await one();
    }),
  );
}

/** Sum of the instructions in callgrind's dumps of `pid` in `dir` made on request (parts 1…, not the final one at exit). */
function dumpedInstructions(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    if (!name.startsWith('callgrind.')) continue;
    const text = readFileSync(join(dir, name), 'utf8');
    const part = /^part: (\d+)$/m.exec(text);
    const events = /^(?:summary|totals): (\d+)$/m.exec(text);
    if (part !== null && part[1] !== '0' && events !== null) total += Number(events[1]);
  }
  return total;
}

async function countOne(variant: (typeof VARIANTS)[number], port: number, warm: number, checks: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-'));
  const env = { RATE_LIMIT_API_KEY_CHECK: '1000000000/60', ...variant.env };
  const server = await startTollgate(variant.name, port, env, { wrapper: ['valgrind', '--tool=callgrind', '--smc-check=all', `--callgrind-out-file=${join(dir, 'callgrind.%p')}`] });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  try {
    const key = await variantKey(server, variant);
    await sendChecks(server.url, key, warm, agent);
    // valgrind's control pipe is named after the HOST and USER its process saw (bench/process.ts sets HOST and no
    // USER): callgrind_control must see the same.
    const controlEnv: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1' };
    delete controlEnv.USER;
    const control = (command: string): void => {
      execFileSync('callgrind_control', [command, String(server.child.pid)], { env: controlEnv, stdio: 'ignore' });
    };
    control('-z');
    await sendChecks(server.url, key, checks, agent);
    control('-d');
    return dumpedInstructions(dir) / checks;
  } finally {
    agent.destroy();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runInstructionsBench(rounds = 3, wanted = ['sqlite', 'access'], warm = 4000, checks = 10_000): Promise<Map<string, number[]>> {
  const counts = new Map<string, number[]>(wanted.map((name) => [name, []]));
  if (!hasValgrind()) {
    process.stdout.write('  valgrind is not installed (apt-get install valgrind): nothing counted\n');
    return counts;
  }
  const variants = wanted.map((name) => {
    const variant = VARIANTS.find((candidate) => candidate.name === name);
    if (variant === undefined || variant.postgres === true) throw new Error(`not a variant this benchmark runs: ${name}`);
    return variant;
  });
  process.stdout.write(`\nAPI key check under callgrind: instructions per check, ${checks} checks after ${warm} warm-up checks, ${CONNECTIONS} connections\n`);
  for (let round = 0; round < rounds; round++) {
    const line: string[] = [];
    // Alternating which goes first.
    for (const variant of round % 2 === 0 ? variants : variants.toReversed()) {
      const perCheck = await countOne(variant, BASE_PORT + 50, warm, checks);
      counts.get(variant.name)!.push(perCheck);
      line.push(`${variant.name} ${Math.round(perCheck)}`);
    }
    process.stdout.write(`  round ${round + 1}/${rounds}: ${line.join('  ')}\n`);
  }
  const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
  const base = mean(counts.get(wanted[0]!)!);
  for (const [name, values] of counts) {
    const spread = `${Math.round(Math.min(...values))}–${Math.round(Math.max(...values))}`;
    const versus = name === wanted[0] ? '' : `  ${((mean(values) / base - 1) * 100).toFixed(1)}% more than ${wanted[0]}`;
    process.stdout.write(`  ${name.padEnd(12)} ${Math.round(mean(values))} instructions per check (${spread})${versus}\n`);
  }
  const access = counts.get('access');
  if (access !== undefined && wanted[0] === 'sqlite') {
    const cost = mean(access) / base - 1;
    process.stdout.write(`  target: access log costs ≤ 5% → ${(cost * 100).toFixed(1)}% more instructions per check, ${cost <= 0.05 ? 'met' : 'MISSED'}\n`);
  }
  return counts;
}
