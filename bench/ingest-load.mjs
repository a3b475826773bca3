// The ingestion benchmark's load generator, in its own plain-node process (autocannon sends one fixed body, and every
// batch here must carry ids never sent before, or the server would only count duplicates). `connections` keep-alive
// connections each POST batches of `batch` events to `url`, back to back, for `seconds`; the events are the ones
// bench/ingest-bare.mjs inserts (same ids' shape, meter, values, timestamp and properties). Prints one JSON line:
// {batches, events, accepted, duplicates, rejected, errors, p50Ms, p99Ms, seconds}.
// Usage: node bench/ingest-load.mjs '{"url":…, "authorization":…, "keys":[…], "meter":…, "connections":…, "seconds":…, "batch":…, "prefix":…}'
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

const options = JSON.parse(process.argv[2] ?? '{}');
const { url, authorization, keys, meter, connections, seconds, batch, prefix } = options;
const target = new URL(url);
const agent = new Agent({ keepAlive: true, maxSockets: connections });
const MODELS = ['small', 'large'];

/** One batch: ids `<prefix>-<connection>-<sequence>-<i>`, spread over the orders' keys; whole-number values. */
function body(connection, sequence) {
  const timestamp = new Date().toISOString();
  const events = [];
  for (let i = 0; i < batch; i++) {
    events.push({
      id: `${prefix}-${connection}-${sequence}-${i}`,
      key: keys[(sequence + i) % keys.length],
      meter,
      value: 1 + ((sequence * 7919 + i * 104729) % 5000),
      timestamp,
      properties: { model: MODELS[i % 2] },
    });
  }
  return JSON.stringify({ events });
}

function post(text) {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), authorization },
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const totals = { batches: 0, events: 0, accepted: 0, duplicates: 0, rejected: 0, errors: 0 };
const latencies = [];
let firstError = null;
const started = performance.now();
const end = started + seconds * 1000;

async function sendFrom(n) {
  for (let sequence = 0; performance.now() < end; sequence++) {
    const text = body(n, sequence);
    const sent = performance.now();
    try {
      const answer = await post(text);
      latencies.push(performance.now() - sent);
      const parsed = JSON.parse(answer.text);
      if (answer.status !== 200 || parsed.error !== null) throw new Error(`${answer.status} ${answer.text.slice(0, 300)}`);
      totals.batches++;
      totals.events += batch;
      totals.accepted += parsed.result.accepted;
      totals.duplicates += parsed.result.duplicates;
      totals.rejected += parsed.result.rejected.length;
      if (parsed.result.rejected.length > 0) firstError ??= JSON.stringify(parsed.result.rejected[0]);
    } catch (error) {
      totals.errors++;
      firstError ??= String(error);
    }
  }
}

await Promise.all(Array.from({ length: connections }, (_, n) => sendFrom(n)));
const elapsed = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (q) => (latencies.length === 0 ? 0 : Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] * 10) / 10);
agent.destroy();
process.stdout.write(`${JSON.stringify({ ...totals, p50Ms: at(0.5), p99Ms: at(0.99), seconds: elapsed, firstError })}\n`);
