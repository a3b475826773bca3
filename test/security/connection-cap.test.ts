// Issue 20, M6: under `ulimit -n 1024`, 1,100 slow-body connections from 10 addresses (each under
// MAX_CONNECTIONS_PER_IP) used up the process's file descriptors and left /healthz unanswered for 30 s, wave after
// wave. Now the process holds at most MAX_CONNECTIONS (by default a share of its descriptor limit, read at start),
// keeps a reserve for new requests by closing the connection idle the longest or the oldest slow one, never one that
// is being answered, and cuts slow requests after a fifth of REQUEST_TIMEOUT_MS while more than half the cap is open.
// Over real sockets only, loopback only (Linux routes all of 127/8 there); every wait has a generous deadline.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { reserveOf } from '../../src/http/connection-pressure.ts';
import { ASSUMED_DESCRIPTOR_LIMIT, defaultMaxConnections, parseDescriptorLimit } from '../../src/http/descriptor-limit.ts';
import { createTestApp, freshPostgresDatabase, type TestApp } from '../helpers/app.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Resolves when `condition` holds, polling; rejects with `what` after `ms`. */
async function until(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

interface Client {
  socket: Socket;
  openedAt: number;
  /** True once the server has closed it (or it failed to connect). */
  closed: () => boolean;
  closedAt: Promise<number>;
  /** Resolves once connected or closed, whichever comes first. */
  settled: Promise<void>;
  received: () => string;
}

/** A connection from `localAddress` that sends `head` once connected, then one byte of `drip` every two seconds. */
function open(port: number, localAddress: string, head: string, drip = ''): Client {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  let received = '';
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  socket.on('data', (chunk) => (received += chunk.toString('utf8')));
  socket.on('error', () => undefined);
  const closedAt = new Promise<number>((resolve) =>
    socket.on('close', () => {
      closed = true;
      clearInterval(timer);
      resolve(Date.now());
    }),
  );
  const settled = new Promise<void>((resolve) => {
    socket.on('connect', () => {
      if (head !== '') socket.write(head);
      if (drip !== '') {
        let sent = 0;
        timer = setInterval(() => {
          if (!socket.destroyed) socket.write(drip[sent++ % drip.length]!);
        }, 2000);
      }
      resolve();
    });
    void closedAt.then(() => resolve());
  });
  return { socket, openedAt: Date.now(), closed: () => closed, closedAt, settled, received: () => received };
}

const SLOW_BODY = 'POST /api/guest/serviceapikey/check HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"key":"';
const SLOW_HEADERS = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n';

/** GET `path` on a fresh connection from `localAddress`: the status, or 0 when the connection failed or timed out. */
function get(port: number, path: string, localAddress: string, headers: Record<string, string> = {}, timeoutMs = 10_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, localAddress, agent: false, timeout: timeoutMs, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve({ status: 0, body }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

describe('the descriptor limit and MAX_CONNECTIONS', () => {
  it('reads the soft "Max open files" of /proc/<pid>/limits', () => {
    const limits = [
      'Limit                     Soft Limit           Hard Limit           Units     ',
      'Max processes             63704                63704                processes ',
      'Max open files            1024                 524288               files     ',
    ].join('\n');
    expect(parseDescriptorLimit(limits)).toBe(1024);
    expect(parseDescriptorLimit(limits.replace('1024  ', 'unlimited'))).toBe(1_048_576);
    expect(parseDescriptorLimit('Max processes 5 5 processes')).toBeNull();
    expect(parseDescriptorLimit('Max open files  lots  lots  files')).toBeNull();
  });

  it('defaults MAX_CONNECTIONS to the limit less room for the database, Redis and files; 1024 assumed where unknown', () => {
    expect(defaultMaxConnections(1024)).toBe(819);
    expect(defaultMaxConnections(256)).toBe(192);
    expect(defaultMaxConnections(65_536)).toBe(52_428);
    expect(defaultMaxConnections(50)).toBe(16);
    expect(defaultMaxConnections(null)).toBe(defaultMaxConnections(ASSUMED_DESCRIPTOR_LIMIT));
    expect(reserveOf(192)).toBe(20);
    expect(reserveOf(4)).toBe(1);
  });

  it('MAX_CONNECTIONS: unset → derived at start (null), 0 → off, an integer; anything else stops the start', () => {
    expect(loadConfig({}).maxConnections).toBeNull();
    expect(loadConfig({ MAX_CONNECTIONS: '0' }).maxConnections).toBe(0);
    expect(loadConfig({ MAX_CONNECTIONS: '5000' }).maxConnections).toBe(5000);
    for (const bad of ['-1', 'many', '1.5']) expect(() => loadConfig({ MAX_CONNECTIONS: bad }), bad).toThrow(ConfigError);
  });
});

describe('a server started under `ulimit -n 256` (a child process, MAX_CONNECTIONS derived from the limit)', () => {
  const METRICS_TOKEN = randomBytes(16).toString('hex');
  const ADDRESSES = Array.from({ length: 10 }, (_, i) => `127.0.0.${20 + i}`);
  const PER_ADDRESS = 30;
  let child: ChildProcess;
  let port = 0;
  let dir = '';
  let dropDatabase = async (): Promise<void> => undefined;
  const output: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-conncap-'));
    let databaseUrl = `sqlite:${join(dir, 'tollgate.db')}`;
    if (process.env.TEST_DATABASE_URL) {
      const postgres = await freshPostgresDatabase(process.env.TEST_DATABASE_URL);
      databaseUrl = postgres.url;
      dropDatabase = postgres.drop;
    }
    // `exec` keeps the pid: the server itself gets SIGTERM at the end.
    child = spawn('bash', ['-c', 'ulimit -n 256 && exec "$0" scripts/start.mjs', process.execPath], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dir,
        DATABASE_URL: databaseUrl,
        ...(process.env.TEST_REDIS_URL && { REDIS_URL: process.env.TEST_REDIS_URL, RATE_LIMIT_REDIS_PREFIX: `conncap-${randomBytes(4).toString('hex')}:` }),
        TOLLGATE_SECRET: randomBytes(32).toString('hex'),
        TOLLGATE_ADMIN_EMAIL: 'admin@example.com',
        TOLLGATE_ADMIN_PASSWORD: 'Admin-Passw0rd',
        TOLLGATE_ADMIN_API_TOKEN: randomBytes(16).toString('hex'),
        METRICS_TOKEN,
        SCHEDULER: 'off',
        // info: the "Server listening" line; no line per request at any level.
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line);
      const listening = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (listening !== null) port = Number(listening[1]);
    });
    await until(
      () => {
        if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode})\n${output.join('\n')}`);
        return port !== 0;
      },
      90_000,
      'the server to listen',
    );
  }, 120_000);

  afterAll(async () => {
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await dropDatabase();
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  async function metric(pattern: RegExp): Promise<number> {
    const { status, body } = await get(port, '/metrics', '127.0.0.4', { authorization: `Bearer ${METRICS_TOKEN}` });
    expect(status).toBe(200);
    const match = pattern.exec(body);
    expect(match, body).not.toBeNull();
    return Number(match![1]);
  }

  it('reads its descriptor limit at start: at most 192 connections of 256 descriptors', async () => {
    expect(await metric(/^tollgate_connections_max (\d+)$/m)).toBe(192);
    expect(output.join('\n')).toMatch(/"maxConnections":192,"descriptorLimit":256,.*"msg":"connection limit"/);
  });

  it.each([1, 2])(
    `wave %i: ${ADDRESSES.length * PER_ADDRESS} slow-body connections from ${ADDRESSES.length} addresses; /healthz and a fresh check are answered, the slow ones are cut to half the cap within seconds`,
    async (wave) => {
      const clients: Client[] = [];
      try {
        for (const address of ADDRESSES) for (let i = 0; i < PER_ADDRESS; i++) clients.push(open(port, address, SLOW_BODY, 'A'));
        await Promise.all(clients.map((client) => client.settled));

        // Fresh, fast requests from another address get through while the wave holds every slot it can.
        for (let i = 0; i < 3; i++) {
          const health = await get(port, '/healthz', '127.0.0.2');
          expect(health, `probe ${i} of wave ${wave}\n${output.slice(-5).join('\n')}`).toEqual({ status: 200, body: '{"status":"ok"}' });
        }
        const check = await new Promise<number>((resolve) => {
          const req = request({ host: '127.0.0.1', port, path: '/api/guest/serviceapikey/check', method: 'POST', localAddress: '127.0.0.3', agent: false, timeout: 10_000, headers: { 'content-type': 'application/json' } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('timeout', () => req.destroy());
          req.on('error', () => resolve(0));
          req.end('{"key":"AAAAAAAA-BBBBBBBB-CCCCCCCC-DDDDDDDD"}');
        });
        expect(check).toBe(200);
        expect(await metric(/^tollgate_connections_closed_total\{reason="shed"\} (\d+)$/m)).toBeGreaterThan(0);

        // Under pressure (more than half of the 192 open) slow bodies are cut after a fifth of REQUEST_TIMEOUT_MS
        // (30 s): the wave is down to half the cap well before 20 s. Below that the usual timeouts apply.
        const stillOpen = () => clients.filter((client) => !client.closed()).length;
        await until(() => stillOpen() <= 96, 20_000, `the slow connections of wave ${wave} to be cut to half the cap`);
        expect(await metric(/^tollgate_connections_open (\d+)$/m)).toBeLessThanOrEqual(97);
      } finally {
        for (const client of clients) client.socket.destroy();
      }
      expect(output.join('\n')).toMatch(/connection limit: closing idle and slow connections/);
    },
    60_000,
  );
});

describe('which connections make room (in process, MAX_CONNECTIONS=10: a reserve of 1)', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await createTestApp({ MAX_CONNECTIONS: '10', KEEP_ALIVE_TIMEOUT_MS: '60000', REQUEST_TIMEOUT_MS: '60000', HEADERS_TIMEOUT_MS: '60000' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
    t.app.server.on('connection', () => accepted++);
  });
  afterAll(async () => {
    // Whatever a failed test left open, so that close() does not wait on it.
    for (const client of everyClient) client.socket.destroy();
    await t.close();
  });
  let accepted = 0;
  const everyClient: Client[] = [];

  const serverConnections = () => new Promise<number>((resolve) => t.app.server.getConnections((_error, count) => resolve(count)));
  /** Opens a connection and waits until the server has accepted it, so that connections are known in opening order. */
  async function opened(head: string, localAddress = '127.0.0.5'): Promise<Client> {
    const before = accepted;
    const client = open(port, localAddress, head);
    everyClient.push(client);
    await client.settled;
    await until(() => client.closed() || accepted > before, 5000, 'the server to accept');
    return client;
  }
  /** A keep-alive connection that has had its answer and now waits for the next request. */
  async function idle(): Promise<Client> {
    const client = await opened('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await until(() => client.received().includes('{"status":"ok"}'), 5000, 'the answer');
    return client;
  }
  /** An open events stream: a request that has arrived and is being answered, for as long as it stays open. */
  async function busy(): Promise<Client> {
    const auth = Buffer.from(`admin:${t.adminToken}`).toString('base64');
    const client = await opened(`GET /api/admin/serviceapikey/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ${auth}\r\n\r\n`);
    await until(() => client.received().includes(': connected'), 5000, 'the stream');
    return client;
  }
  const slow = () => opened(SLOW_HEADERS);
  /** Lets the server act on what it was sent, and the client see a close. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

  it('past the reserve, each new connection closes the connection idle the longest, then the oldest slow one; never a busy one', async () => {
    const clients: Client[] = [];
    try {
      const idles = [await idle(), await idle(), await idle()];
      const slows = [await slow(), await slow()];
      const busies = [await busy(), await busy(), await busy()];
      clients.push(...idles, ...slows, ...busies);
      // 8 open; the 9th fills the cap less its reserve: nothing is closed.
      clients.push(await slow());
      await settle();
      expect(clients.filter((client) => client.closed())).toHaveLength(0);

      // Each one past that closes one: the three idle ones in the order they went idle…
      for (const [i, expected] of idles.entries()) {
        clients.push(await slow());
        await until(() => expected.closed(), 5000, `idle connection ${i} to be closed`);
        expect(idles.map((client) => client.closed())).toEqual([0, 1, 2].map((n) => n <= i));
        expect(clients.filter((client) => client.closed())).toHaveLength(i + 1);
      }
      // …then the oldest slow one.
      clients.push(await slow());
      await until(() => slows[0]!.closed(), 5000, 'the oldest slow connection to be closed');
      await settle();
      expect(slows[1]!.closed()).toBe(false);
      for (const stream of busies) expect(stream.closed()).toBe(false);
      // A fresh request is answered.
      expect((await get(port, '/healthz', '127.0.0.6')).status).toBe(200);
    } finally {
      for (const client of clients) client.socket.destroy();
    }
    await until(async () => (await serverConnections()) === 0, 5000, 'the connections to close');
  });

  it('when every other connection is busy, the reserve takes new ones up to the cap; past it a new one is refused', async () => {
    const clients: Client[] = [];
    try {
      for (let i = 0; i < 9; i++) clients.push(await busy());
      // The 10th is in the reserve: answered, though nothing could be closed for it.
      expect((await get(port, '/healthz', '127.0.0.6')).status).toBe(200);
      await until(async () => (await serverConnections()) === 9, 5000, 'the probe to close');
      // With 10 streams open, an 11th connection is refused at once: a stream is never cut for it.
      clients.push(await busy());
      const refused = open(port, '127.0.0.7', SLOW_HEADERS);
      everyClient.push(refused);
      await until(() => refused.closed(), 5000, 'the 11th connection to be refused');
      expect(refused.received()).toBe('');
      await settle();
      for (const stream of clients) expect(stream.closed()).toBe(false);
    } finally {
      for (const client of clients) client.socket.destroy();
    }
    await until(async () => (await serverConnections()) === 0, 5000, 'the connections to close');
    expect((await get(port, '/healthz', '127.0.0.6')).status).toBe(200);
  });
});

describe('slow requests and idle connections are cut sooner only under pressure (MAX_CONNECTIONS=10, REQUEST_TIMEOUT_MS=10000 → 2 s)', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await createTestApp({ MAX_CONNECTIONS: '10', REQUEST_TIMEOUT_MS: '10000', HEADERS_TIMEOUT_MS: '10000', KEEP_ALIVE_TIMEOUT_MS: '60000' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await t.close();
  });

  it('half the cap or less: slow bodies and idle connections live on; more than half: cut after about 2 s, long before the 10 s timeout', async () => {
    const calm: Client[] = [];
    const pressed: Client[] = [];
    try {
      for (let i = 0; i < 4; i++) calm.push(open(port, '127.0.0.8', SLOW_BODY, 'A'));
      // An idle keep-alive connection (KEEP_ALIVE_TIMEOUT_MS is a minute here).
      calm.push(open(port, '127.0.0.8', 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'));
      await Promise.all(calm.map((client) => client.settled));
      await until(() => calm[4]!.received().includes('{"status":"ok"}'), 5000, 'the answer');
      await new Promise((resolve) => setTimeout(resolve, 4000));
      expect(calm.filter((client) => client.closed())).toHaveLength(0);

      for (let i = 0; i < 2; i++) pressed.push(open(port, '127.0.0.9', SLOW_BODY, 'A'));
      await Promise.all(pressed.map((client) => client.settled));
      const started = Date.now();
      const all = [...calm, ...pressed];
      await until(() => all.every((client) => client.closed()), 8000, 'the slow connections to be cut');
      const closedAt = await Promise.all(all.map((client) => client.closedAt));
      // The newest were given their full 2 s; every one went long before REQUEST_TIMEOUT_MS.
      for (const [i, at] of closedAt.slice(calm.length).entries()) expect(at - pressed[i]!.openedAt).toBeGreaterThanOrEqual(1900);
      expect(Math.max(...closedAt) - started).toBeLessThan(8000);
    } finally {
      for (const client of [...calm, ...pressed]) client.socket.destroy();
    }
  }, 30_000);
});

/** A throw-away self-signed certificate, or null where `openssl` is missing. */
function selfSigned(dir: string): { cert: string; key: string } | null {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' });
  return made.status === 0 ? { cert, key } : null;
}

const tlsDir = mkdtempSync(join(tmpdir(), 'tollgate-conncap-tls-'));
const certificate = selfSigned(tlsDir);
if (certificate === null) rmSync(tlsDir, { recursive: true, force: true });

describe.skipIf(certificate === null)('over TLS (TLS_CERT_FILE; skipped where openssl is missing): a request on the TLS socket marks its connection busy', () => {
  let t: TestApp;
  let port: number;
  const streams: TLSSocket[] = [];
  const others: Client[] = [];

  beforeAll(async () => {
    t = await createTestApp({ MAX_CONNECTIONS: '4', TLS_CERT_FILE: certificate!.cert, TLS_KEY_FILE: certificate!.key });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const stream of streams) stream.destroy();
    for (const client of others) client.socket.destroy();
    await t.close();
    rmSync(tlsDir, { recursive: true, force: true });
  });

  it('three TLS events streams and a silent connection: the next connection closes the silent one, not a stream', async () => {
    const auth = Buffer.from(`admin:${t.adminToken}`).toString('base64');
    const closed = new Set<TLSSocket>();
    for (let i = 0; i < 3; i++) {
      const stream = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false });
      streams.push(stream);
      let received = '';
      stream.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
      stream.on('error', () => undefined);
      stream.on('close', () => closed.add(stream));
      stream.on('secureConnect', () => stream.write(`GET /api/admin/serviceapikey/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ${auth}\r\n\r\n`));
      await until(() => received.includes(': connected'), 10_000, `TLS stream ${i}`);
    }
    // No TLS handshake at all: slow. Four open fill the cap less its reserve (3) plus the reserve.
    const silent = open(port, '127.0.0.11', '');
    others.push(silent);
    await silent.settled;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(silent.closed()).toBe(false);
    const next = open(port, '127.0.0.12', '');
    others.push(next);
    await until(() => silent.closed(), 5000, 'the silent connection to be closed');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(closed.size).toBe(0);
  });
});
