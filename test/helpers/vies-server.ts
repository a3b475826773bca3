// The VIES stand-in (issue 26): a small local HTTP server speaking the EU's VIES REST API as Tollgate uses it —
// POST /check-vat-number {countryCode, vatNumber, requesterMemberStateCode?, requesterNumber?} → {countryCode,
// vatNumber, requestDate, valid, requestIdentifier, name, address}, and VIES's error shape {actionSucceed: false,
// errorWrappers: [{error, message}]}. Numbers are valid or invalid as the test says (unknown ones are invalid); the
// server can be down (connections refused), slow, answer garbage, or answer an error code such as MS_UNAVAILABLE.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type ViesMode = 'normal' | 'down' | 'slow' | 'garbage' | 'MS_UNAVAILABLE' | 'MS_MAX_CONCURRENT_REQ' | 'SERVICE_UNAVAILABLE';

export interface ViesRequestSeen {
  countryCode: string;
  vatNumber: string;
  requesterMemberStateCode: string | null;
  requesterNumber: string | null;
}

export class ViesStandIn {
  /** Full numbers with their prefix ("FR12345678901") → the trader's name and address. */
  private readonly valid = new Map<string, { name: string; address: string }>();
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private counter = 0;
  mode: ViesMode = 'normal';
  /** How long 'slow' waits before answering. */
  slowMs = 2000;
  readonly requests: ViesRequestSeen[] = [];
  url = '';

  setValid(fullNumber: string, name = 'Trader SA', address = '1 Rue du Commerce\n75001 Paris'): void {
    this.valid.set(fullNumber, { name, address });
  }

  setInvalid(fullNumber: string): void {
    this.valid.delete(fullNumber);
  }

  async start(): Promise<string> {
    this.server = createServer((request, response) => void this.handle(request, response));
    this.server.on('connection', (socket) => {
      // "Down": the connection is dropped at once, as a refused or reset connection looks to the client.
      if (this.mode === 'down') {
        socket.destroy();
        return;
      }
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/rest-api`;
    return this.url;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server === null ? resolve() : this.server.close(() => resolve())));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // A kept-alive connection from before VIES went down is cut at its next request.
    if (this.mode === 'down') {
      request.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const send = (status: number, body: unknown): void => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (request.method !== 'POST' || request.url !== '/rest-api/check-vat-number') return send(404, { errorWrappers: [{ error: 'NOT_FOUND' }] });
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      return send(400, { actionSucceed: false, errorWrappers: [{ error: 'INVALID_INPUT', message: 'Malformed request' }] });
    }
    const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
    const seen = { countryCode: text(body.countryCode) ?? '', vatNumber: text(body.vatNumber) ?? '', requesterMemberStateCode: text(body.requesterMemberStateCode), requesterNumber: text(body.requesterNumber) };
    this.requests.push(seen);
    if (this.mode === 'slow') await new Promise((resolve) => setTimeout(resolve, this.slowMs));
    if (this.mode === 'garbage') {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<html><body>Service temporarily unavailable</body></html>');
      return;
    }
    if (this.mode === 'MS_UNAVAILABLE' || this.mode === 'MS_MAX_CONCURRENT_REQ' || this.mode === 'SERVICE_UNAVAILABLE') {
      return send(this.mode === 'SERVICE_UNAVAILABLE' ? 500 : 200, { actionSucceed: false, errorWrappers: [{ error: this.mode, message: 'The member state service is unavailable' }] });
    }
    if (!/^[A-Z]{2}$/.test(seen.countryCode) || !/^[0-9A-Z+*]{2,12}$/.test(seen.vatNumber)) {
      return send(400, { actionSucceed: false, errorWrappers: [{ error: 'INVALID_INPUT', message: 'Invalid input' }] });
    }
    const trader = this.valid.get(`${seen.countryCode}${seen.vatNumber}`);
    this.counter += 1;
    send(200, {
      countryCode: seen.countryCode,
      vatNumber: seen.vatNumber,
      requestDate: new Date().toISOString(),
      valid: trader !== undefined,
      // VIES gives a consultation number only when the requester named its own number.
      requestIdentifier: seen.requesterNumber === null ? '' : `WAPIAAAAY${String(this.counter).padStart(7, '0')}`,
      name: trader?.name ?? '---',
      address: trader?.address ?? '---',
    });
  }
}
