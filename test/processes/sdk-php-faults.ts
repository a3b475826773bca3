// A small HTTP server standing between the PHP SDK's tests and Tollgate, to play the failures the SDK must survive.
// The mode is the first path segment, the rest is Tollgate's path:
//   /garbage/...       200 with an HTML page (a captive portal, a wrong base URL)
//   /slow/...          answers nothing for 3 s (the SDK's timeout is shorter)
//   /bad-gateway/...   502 with an HTML page (a proxy in front of a Tollgate that is down)
//   /too-many/...      429 with Retry-After: 7 (Tollgate's rate limit)
//   /via/<label>/...   forwards to Tollgate and logs the call under <label>
//   /delay-writes/<label>/...  the same, but report_usage and usage/ingest reach Tollgate 1.5 s late
//   /lose/<label>/...  the same, but the first report_usage and the first usage/ingest under <label> lose their answer:
//                      the connection drops after Tollgate answered (what Tollgate did stays done)
//   /log/<label>       the calls forwarded under <label>: [{path, body, status, answer, lost}]
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Forwarded {
  path: string;
  body: unknown;
  status: number;
  answer: unknown;
  lost: boolean;
}

export interface FaultServer {
  url: string;
  close(): Promise<void>;
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export async function startFaultServer(tollgateUrl: () => string): Promise<FaultServer> {
  const logs = new Map<string, Forwarded[]>();
  const slow = new Set<NodeJS.Timeout>();
  const server: Server = createServer((request, response) => {
    void (async () => {
      const [, mode = '', ...rest] = (request.url ?? '/').split('/');
      if (mode === 'garbage') {
        response.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome to the hotel Wi-Fi</body></html>');
        return;
      }
      if (mode === 'bad-gateway') {
        response.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
        return;
      }
      if (mode === 'slow') {
        const timer = setTimeout(() => response.writeHead(504).end(), 3000);
        slow.add(timer);
        response.on('close', () => {
          clearTimeout(timer);
          slow.delete(timer);
        });
        return;
      }
      if (mode === 'too-many') {
        response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' }).end(JSON.stringify({ result: null, error: { message: 'Too many requests', code: 429 } }));
        return;
      }
      if (mode === 'log') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(logs.get(rest[0] ?? '') ?? []));
        return;
      }
      if (mode === 'via' || mode === 'lose' || mode === 'delay-writes') {
        const [label = '', ...path] = rest;
        const target = `/${path.join('/')}`;
        const body = await bodyOf(request);
        const write = /report_usage|usage\/ingest/.test(target);
        if (mode === 'delay-writes' && write) await new Promise((done) => setTimeout(done, 1500));
        const forwarded = await fetch(`${tollgateUrl()}${target}`, {
          method: request.method ?? 'POST',
          headers: { authorization: request.headers.authorization ?? '', 'content-type': request.headers['content-type'] ?? 'application/json' },
          ...(request.method === 'GET' ? {} : { body }),
        });
        const answer = await forwarded.text();
        const log = logs.get(label) ?? [];
        logs.set(label, log);
        const lost = mode === 'lose' && write && !log.some((entry) => entry.path === target);
        log.push({ path: target, body: parsed(body), status: forwarded.status, answer: parsed(answer), lost });
        if (lost) {
          request.socket.destroy();
          return;
        }
        response.writeHead(forwarded.status, { 'content-type': 'application/json' }).end(answer);
        return;
      }
      response.writeHead(404).end();
    })().catch(() => response.destroy());
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      for (const timer of slow) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}
