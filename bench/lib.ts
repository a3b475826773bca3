// Shared benchmark plumbing. The load generator (autocannon) runs in a child process so it does not share the
// server's event loop; the server under test runs in this process.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

const AUTOCANNON = fileURLToPath(new URL('../node_modules/autocannon/autocannon.js', import.meta.url));

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
  connections?: number;
  seconds?: number;
  /** Requests per second to send in all (autocannon -R); unset: as fast as the server answers. */
  rate?: number;
}

export interface LoadResult {
  name: string;
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** Requests completed in the run (when the load generator reports it). */
  total?: number;
}

export function runLoad(name: string, options: LoadOptions): Promise<LoadResult> {
  const args = [AUTOCANNON, '--json', '-c', String(options.connections ?? 10), '-d', String(options.seconds ?? 5)];
  if (options.rate !== undefined) args.push('-R', String(options.rate));
  if (options.method !== undefined) args.push('-m', options.method);
  if (options.body !== undefined) args.push('-b', options.body);
  for (const [key, value] of Object.entries(options.headers ?? {})) args.push('-H', `${key}=${value}`);
  args.push(options.url);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error !== null) {
        reject(error);
        return;
      }
      const report = JSON.parse(stdout) as {
        requests: { average: number; total: number };
        latency: { p50: number; p99: number };
        non2xx: number;
        errors: number;
      };
      resolve({
        name,
        requestsPerSec: Math.round(report.requests.average),
        p50Ms: report.latency.p50,
        p99Ms: report.latency.p99,
        non2xx: report.non2xx,
        errors: report.errors,
        total: report.requests.total,
      });
    });
  });
}

export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as AddressInfo;
  return `http://127.0.0.1:${address.port}`;
}

export function printTable(title: string, rows: LoadResult[], baseline?: LoadResult): void {
  process.stdout.write(`\n${title}\n`);
  for (const row of rows) {
    const ratio = baseline !== undefined && row !== baseline ? `  ${((row.requestsPerSec / baseline.requestsPerSec) * 100).toFixed(0)}% of ${baseline.name}` : '';
    const bad = row.non2xx + row.errors > 0 ? `  (non-2xx ${row.non2xx}, errors ${row.errors})` : '';
    process.stdout.write(
      `  ${row.name.padEnd(44)} ${String(row.requestsPerSec).padStart(7)} req/s   p50 ${row.p50Ms} ms   p99 ${row.p99Ms} ms${ratio}${bad}\n`,
    );
  }
}
