// Issue 8 item 3: slow clients cannot exhaust the server. Over a real socket, a few hundred connections from one
// address send a body (or headers) one byte every two seconds: those past MAX_CONNECTIONS_PER_IP are closed at once,
// the rest are cut by the request and headers timeouts, idle keep-alive connections are closed, and /healthz from
// another address answers promptly throughout. Bounded: well under 30 s.
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

const SLOW = '127.0.0.2';
const PROBE = '127.0.0.3';
const WHITELISTED = '127.0.0.4';
const CAP = 40;
const CONNECTIONS = 300;

interface SlowClient {
  socket: Socket;
  openedAt: number;
  closedAt: Promise<number>;
  received: () => string;
  /** Bytes of the drip written so far (the first one two seconds after connecting). */
  dripped: () => number;
}

describe('settings', () => {
  it('defaults: 30 s per request, 10 s for headers, 10 s keep-alive, 128 connections per address (none behind a proxy)', () => {
    expect(loadConfig({})).toMatchObject({ requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 10_000, maxConnectionsPerIp: 128 });
    expect(loadConfig({ TRUST_PROXY: '1' }).maxConnectionsPerIp).toBe(0);
    expect(loadConfig({ TRUST_PROXY: '1', MAX_CONNECTIONS_PER_IP: '500' }).maxConnectionsPerIp).toBe(500);
    expect(() => loadConfig({ REQUEST_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '2000' })).toThrow(/HEADERS_TIMEOUT_MS/);
  });
});

describe('slow clients over a real socket', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await createTestApp({
      REQUEST_TIMEOUT_MS: '3000',
      HEADERS_TIMEOUT_MS: '2000',
      KEEP_ALIVE_TIMEOUT_MS: '1000',
      MAX_CONNECTIONS_PER_IP: String(CAP),
      RATE_LIMIT_WHITELIST: WHITELISTED,
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await t.close();
  });

  it('the server built from the configuration carries the timeouts (as `npm start` builds it: loadConfig → buildApp)', () => {
    expect(t.app.server.requestTimeout).toBe(3000);
    expect(t.app.server.headersTimeout).toBe(2000);
    expect(t.app.server.keepAliveTimeout).toBe(1000);
  });

  /** A connection from `SLOW` that sends `head` and then one byte of `drip` every two seconds. */
  function slowClient(head: string, drip: string): SlowClient {
    const socket = connect({ host: '127.0.0.1', port, localAddress: SLOW });
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    let dripped = () => 0;
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
    });
    socket.on('error', () => {});
    socket.on('connect', () => {
      socket.write(head);
      let sent = 0;
      timer = setInterval(() => {
        if (!socket.destroyed) socket.write(drip[sent++ % drip.length]!);
      }, 2000);
      dripped = () => sent;
    });
    const closedAt = new Promise<number>((resolve) =>
      socket.on('close', () => {
        clearInterval(timer);
        resolve(Date.now());
      }),
    );
    return { socket, openedAt: Date.now(), closedAt, received: () => received, dripped: () => dripped() };
  }

  /** GET /healthz from `PROBE` on a fresh connection: [status, milliseconds]. */
  function probe(): Promise<[number, number]> {
    const started = Date.now();
    return new Promise((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/healthz', localAddress: PROBE, agent: false, timeout: 2000 }, (res) => {
        res.resume();
        res.on('end', () => resolve([res.statusCode ?? 0, Date.now() - started]));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve([0, Date.now() - started]));
      req.end();
    });
  }

  it(`${CONNECTIONS} slow connections from one address: past ${CAP} closed at once, the rest cut by the timeouts; /healthz stays reachable`, async () => {
    const started = Date.now();
    const clients: SlowClient[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      clients.push(
        i % 2 === 0
          ? // A body that trickles in: the request timeout.
            slowClient('POST /api/guest/system/version HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n', '{"a":1}')
          : // Headers that trickle in: the headers timeout.
            slowClient('GET /healthz HTTP/1.1\r\nHost: localhost\r\n', 'X-Slow: yes\r\n'),
      );
    }

    const probes: Array<[number, number]> = [];
    // An object, not a `let`: the flag is flipped by the promise below while the probing loop awaits.
    const state = { allClosed: false };
    const closed = Promise.all(clients.map((client) => client.closedAt)).then((times) => {
      state.allClosed = true;
      return times;
    });
    const deadline = new Promise<null>((resolve) => setTimeout(() => resolve(null), 15_000));
    try {
      const probing = (async () => {
        while (!state.allClosed && Date.now() - started < 15_000) {
          probes.push(await probe());
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      })();
      const times = await Promise.race([closed, deadline]);
      await probing;
      const stillOpen = clients.filter((client) => !client.socket.destroyed).length;
      expect(times, `${stillOpen} slow connections still open after 15 s`).not.toBeNull();

      const lifetimes = clients.map((client, i) => times![i]! - client.openedAt);
      // Told apart by what happened on each connection, not by how long it took on a shared machine: the cap closes
      // a connection without a word before it has sent a byte past its head; a timeout answers 400 or 408 first.
      const refusedAtOnce = clients.filter((client) => client.received() === '' && client.dripped() === 0).length;
      const cutByTimeout = clients.filter((client) => /^HTTP\/1\.1 (400|408) /.test(client.received())).length;
      // The cap: everything past the first CAP connections of the address is closed at once.
      expect(refusedAtOnce).toBeGreaterThanOrEqual(CONNECTIONS - CAP);
      // The accepted ones lived until a timeout cut them, which answered the envelope before closing.
      expect(cutByTimeout).toBeGreaterThan(0);
      expect(cutByTimeout + refusedAtOnce).toBe(CONNECTIONS);
      expect(Math.max(...lifetimes)).toBeLessThan(8000);

      // Every probe was answered within its own timeout (probe(): 2 s, the headers timeout), i.e. without waiting
      // for a slow connection to be cut; a probe that timed out reads as status 0.
      expect(probes.length).toBeGreaterThan(3);
      for (const [status] of probes) expect(status).toBe(200);
    } finally {
      for (const client of clients) client.socket.destroy();
    }
  }, 30_000);

  it('a whitelisted address (the operator\'s application server) may hold more connections than the cap', async () => {
    const sockets = await Promise.all(
      Array.from(
        { length: CAP + 20 },
        () =>
          new Promise<Socket>((resolve, reject) => {
            const socket = connect({ host: '127.0.0.1', port, localAddress: WHITELISTED }, () => resolve(socket));
            socket.on('error', reject);
          }),
      ),
    );
    try {
      // Each connection still answers a request: none was closed by the cap.
      const answers = await Promise.all(
        sockets.map(
          (socket) =>
            new Promise<string>((resolve) => {
              let received = '';
              socket.on('data', (chunk) => {
                received += chunk.toString('utf8');
                if (received.includes('\r\n\r\n')) resolve(received);
              });
              socket.on('close', () => resolve(received));
              socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
            }),
        ),
      );
      for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', async () => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: PROBE });
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
    });
    const closedAt = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now())));
    await new Promise((resolve) => socket.on('connect', resolve));
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n');
    const sentAt = Date.now();
    const idleFor = (await Promise.race([closedAt, new Promise<number>((resolve) => setTimeout(() => resolve(Number.NaN), 6000))])) - sentAt;
    socket.destroy();
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    expect(idleFor).toBeGreaterThanOrEqual(900);
    expect(idleFor).toBeLessThan(4000);
  });
});
