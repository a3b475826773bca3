// A proxy between the SDK and a real Tollgate that can fail `admin/usage/ingest` the ways a network does: answer an
// error itself, cut the connection before the request reaches Tollgate, cut it after Tollgate stored the batch (the
// answer is lost), or hold the answer past the SDK's timeout. Everything else (get_info, the events stream) passes
// through untouched. It records each ingest request's parsed body, so a test can compare a retry with the first try.
import { createServer, request as forward, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with one ingest request; `status` answers it with that HTTP status and an error envelope. */
export type IngestMode = 'pass' | 'cut-before' | 'cut-after' | { slowMs: number } | { status: number };

export interface IngestProxy {
  url: string;
  /** Every ingest request's `events`, in arrival order (also those the proxy failed). */
  readonly ingests: Array<Array<Record<string, unknown>>>;
  /** Decides each ingest request (default: pass); gets the request's events. */
  decide: (events: Array<Record<string, unknown>>) => IngestMode;
  close(): Promise<void>;
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startIngestProxy(target: () => string): Promise<IngestProxy> {
  const proxy: IngestProxy = { url: '', ingests: [], decide: () => 'pass', close: async () => undefined };

  /** Sends the request on to Tollgate; resolves with its answer (status, headers, body). */
  function relay(request: IncomingMessage, body: Buffer | null, response: ServerResponse | null) {
    const url = new URL(request.url ?? '/', target());
    return new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
      const outgoing = forward(url, { method: request.method, headers: { ...request.headers, host: url.host } }, (answer) => {
        if (response !== null) {
          // Streamed through (the events stream): no buffering.
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
          return;
        }
        bodyOf(answer).then((text) => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: text }), reject);
      });
      outgoing.on('error', reject);
      if (body === null) request.pipe(outgoing);
      else outgoing.end(body);
    });
  }

  const server: Server = createServer((request, response) => {
    if (!(request.url ?? '').startsWith('/api/admin/usage/ingest')) {
      relay(request, null, response).catch(() => response.destroy());
      return;
    }
    void (async () => {
      const body = await bodyOf(request);
      const events = (JSON.parse(body.toString()) as { events: Array<Record<string, unknown>> }).events;
      proxy.ingests.push(events);
      const mode = proxy.decide(events);
      if (mode === 'cut-before') {
        response.destroy();
      } else if (typeof mode === 'object' && 'status' in mode) {
        response.writeHead(mode.status, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ result: null, error: { message: `proxy says ${mode.status}`, code: mode.status } }));
      } else {
        const answer = await relay(request, body, null);
        if (typeof mode === 'object') await new Promise((resolve) => setTimeout(resolve, mode.slowMs));
        if (mode === 'cut-after') response.destroy();
        else if (!response.destroyed) response.writeHead(answer.status, answer.headers).end(answer.body);
      }
    })().catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return proxy;
}
