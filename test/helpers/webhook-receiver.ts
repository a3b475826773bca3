// A real webhook receiver for tests: an HTTP server on 127.0.0.1 (ephemeral port) that verifies every request with
// the `standardwebhooks` library — the spec's own implementation checks our signatures — and answers as told.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export type Behaviour =
  | { kind: 'status'; status: number; location?: string }
  /** Answers 200 after `ms` (past the sender's timeout in the tests). */
  | { kind: 'slow'; ms: number };

export interface Received {
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed payload as standardwebhooks returned it, or null when verification failed. */
  verified: { type: string; timestamp: string; data: Record<string, unknown> } | null;
  verifyError: string | null;
}

export class Receiver {
  readonly received: Received[] = [];
  behaviour: Behaviour = { kind: 'status', status: 200 };
  /** When set, requests after this many are recorded but not answered: the crash test kills the sender then. */
  holdAfter: number | null = null;
  /** The signing secret the receiver verifies with (set after create / rotate). */
  secret = '';
  /** Slow answers the sender hung up on before they were due, and slow answers sent all the same. */
  hungUpOn = 0;
  answeredLate = 0;
  private server: Server | null = null;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let verified: Received['verified'] = null;
        let verifyError: string | null = null;
        try {
          verified = new Webhook(this.secret).verify(body, {
            'webhook-id': String(request.headers['webhook-id']),
            'webhook-timestamp': String(request.headers['webhook-timestamp']),
            'webhook-signature': String(request.headers['webhook-signature']),
          }) as Received['verified'];
        } catch (error) {
          verifyError = error instanceof Error ? error.message : String(error);
        }
        this.received.push({ id: String(request.headers['webhook-id']), headers: request.headers, body, verified, verifyError });
        const behaviour = this.behaviour;
        // Past `holdAfter` requests: recorded, never answered (until the connection closes) — on the wire.
        if (this.holdAfter !== null && this.received.length > this.holdAfter) return;
        if (behaviour.kind === 'slow') {
          const timer = setTimeout(() => {
            this.answeredLate++;
            response.writeHead(200).end('late');
          }, behaviour.ms);
          response.on('close', () => {
            clearTimeout(timer);
            if (!response.writableEnded) this.hungUpOn++;
          });
          return;
        }
        response.writeHead(behaviour.status, behaviour.location === undefined ? {} : { location: behaviour.location }).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    if (this.server === null) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
    this.server = null;
  }
}
