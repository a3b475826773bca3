// The middleware's `meters` option (issue 23 item 6) in real Express, Fastify and Hono apps on real sockets, against
// a real Tollgate process: a request whose key was valid is metered from its request and response (response bytes,
// tokens from a header, a property from the URL), a refused request is not, and a meters function that throws or
// returns a bad reading goes to onError while the app goes on answering.
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import express from 'express';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Hono, type Context } from 'hono';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Tollgate, type MeterReading, type VerifyResult } from '../src/index.ts';
import { tollgateExpress } from '../src/express.ts';
import { tollgateFastify } from '../src/fastify.ts';
import { tollgateHono } from '../src/hono.ts';
import { sellKey, startTollgate, type TollgateProcess } from './server.ts';
import { storedEvents } from './stored-events.ts';

const METERS = [
  { code: 'bytes', name: 'Bytes out', unit: 'byte', aggregation: 'sum' },
  { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' },
  { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count' },
];
const BODY = JSON.stringify({ answer: 'forty-two', padding: 'x'.repeat(100) });

let server: TollgateProcess;
let tollgate: Tollgate;
const reported: Array<{ error: unknown; what: string }> = [];
/** What the apps' meters functions do: read the response, throw, or return a bad reading. */
let behaviour: 'read' | 'throw' | 'bad reading' = 'read';
const apps: Array<{ name: string; url: string; close: () => Promise<void> }> = [];

/** The readings every framework derives the same way from its own request and response. */
function readings(tokensHeader: string | null | undefined, contentLength: string | number | null | undefined, path: string): MeterReading[] {
  if (behaviour === 'throw') throw new Error('the meters function failed');
  const list: MeterReading[] = [
    { meter: 'bytes', value: Number(contentLength) },
    { meter: 'tokens', value: Number(tokensHeader), properties: { path } },
    { meter: 'requests' },
  ];
  if (behaviour === 'bad reading') list.unshift({ meter: 'tokens', value: -5 });
  return list;
}

beforeAll(async () => {
  server = await startTollgate();
  tollgate = new Tollgate({ baseUrl: server.baseUrl, token: server.adminToken, reportIntervalMs: 60_000, onError: (error, what) => reported.push({ error, what }) });

  const expressApp = express();
  expressApp.use(tollgateExpress(tollgate, { meters: (req: express.Request, res: express.Response) => readings(res.get('x-tokens'), res.get('content-length'), req.path) }));
  expressApp.get('/answer', (_req, res) => {
    res.set('x-tokens', '42').type('application/json').send(BODY);
  });
  const expressServer = expressApp.listen(0, '127.0.0.1');
  await new Promise((resolve) => expressServer.once('listening', resolve));
  apps.push({
    name: 'express',
    url: `http://127.0.0.1:${(expressServer.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => expressServer.close(() => resolve())),
  });

  const fastifyApp = Fastify();
  fastifyApp.decorateRequest('tollgate', null);
  fastifyApp.addHook('preHandler', tollgateFastify(tollgate, { meters: (request: FastifyRequest, reply: FastifyReply) => readings(String(reply.getHeader('x-tokens')), String(reply.getHeader('content-length')), request.url) }));
  fastifyApp.get('/answer', async (_request, reply) => reply.header('x-tokens', '42').type('application/json').send(BODY));
  const fastifyUrl = await fastifyApp.listen({ port: 0, host: '127.0.0.1' });
  apps.push({ name: 'fastify', url: fastifyUrl, close: () => fastifyApp.close() });

  const honoApp = new Hono<{ Variables: { tollgate: VerifyResult } }>();
  // Hono's response is the handler's Response object: its headers hold what the handler set.
  honoApp.use(tollgateHono(tollgate, { meters: (c: Context<{ Variables: { tollgate: VerifyResult } }>) => readings(c.res.headers.get('x-tokens'), c.res.headers.get('content-length'), c.req.path) }));
  honoApp.get('/answer', (c) => c.body(BODY, 200, { 'x-tokens': '42', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(BODY)) }));
  const honoServer: ServerType = await new Promise((resolve) => {
    const started = serve({ fetch: honoApp.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started));
  });
  apps.push({
    name: 'hono',
    url: `http://127.0.0.1:${(honoServer.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => honoServer.close(() => resolve())),
  });
}, 180_000);

beforeEach(() => {
  behaviour = 'read';
  reported.length = 0;
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await tollgate?.close();
  await server?.stop();
});

describe.each(['express', 'fastify', 'hono'])('%s middleware with meters', (name) => {
  const get = async (key: string | null) => {
    const app = apps.find((candidate) => candidate.name === name)!;
    const response = await fetch(`${app.url}/answer`, { headers: key === null ? {} : { 'x-api-key': key } });
    return { status: response.status, bytes: Buffer.byteLength(await response.text()) };
  };
  /** The meters function runs once the response is out, which may be just after the client has read it. */
  const queued = (count: number) => expect.poll(() => tollgate.queuedEvents, { timeout: 2000, interval: 10 }).toBe(count);

  it('tracks the readings of each request whose key was valid, from its response', async () => {
    const { key, orderId } = await sellKey(server, { meters: METERS });
    const first = await get(key);
    const second = await get(key);
    expect([first.status, second.status]).toEqual([200, 200]);
    await queued(6);
    await tollgate.flush();
    const rows = storedEvents(server, orderId);
    const sum = (meter: string) => rows.filter((row) => row.meter === meter).reduce((total, row) => total + (row.value ?? 0), 0);
    expect(sum('bytes')).toBe(first.bytes + second.bytes);
    expect(sum('tokens')).toBe(84);
    expect(rows.filter((row) => row.meter === 'requests')).toHaveLength(2);
    expect(rows.find((row) => row.meter === 'tokens')?.properties).toEqual({ path: '/answer' });
    expect(reported).toEqual([]);
  });

  it('tracks nothing for a request the key did not let through', async () => {
    expect((await get(null)).status).toBe(401);
    expect((await get('FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF')).status).toBe(401);
    // Absence cannot be polled for: give a 'finish' listener, had one been added, time to run.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(tollgate.queuedEvents).toBe(0);
  });

  it('reports a meters function that throws, or a bad reading, to onError and keeps answering (the good readings still count)', async () => {
    const { key, orderId } = await sellKey(server, { meters: METERS });
    behaviour = 'throw';
    expect((await get(key)).status).toBe(200);
    await expect.poll(() => reported.length, { timeout: 2000, interval: 10 }).toBe(1);
    expect(reported).toEqual([{ what: 'meters', error: expect.objectContaining({ message: 'the meters function failed' }) }]);
    expect(tollgate.queuedEvents).toBe(0);

    behaviour = 'bad reading';
    expect((await get(key)).status).toBe(200);
    await queued(3);
    expect(reported[1]).toEqual({ what: 'meters', error: expect.any(TypeError) });
    expect(String(reported[1]!.error)).toContain('value must be a whole number');
    await tollgate.flush();
    expect(storedEvents(server, orderId).map((row) => row.meter).toSorted()).toEqual(['bytes', 'requests', 'tokens']);
  });
});

describe('trackReadings', () => {
  it('takes one reading, a list, or nothing, and reports what is not a reading', async () => {
    const { key, orderId } = await sellKey(server, { meters: METERS });
    tollgate.trackReadings(key, () => ({ meter: 'requests' }));
    tollgate.trackReadings(key, () => [{ meter: 'tokens', value: 3 }, { meter: 'requests' }]);
    tollgate.trackReadings(key, () => null);
    tollgate.trackReadings(key, () => undefined);
    tollgate.trackReadings(key, () => []);
    tollgate.trackReadings(key, () => ['requests'] as unknown as MeterReading[]);
    expect(tollgate.queuedEvents).toBe(3);
    expect(reported).toEqual([{ what: 'meters', error: expect.objectContaining({ message: expect.stringContaining('each reading must be an object') }) }]);
    await tollgate.flush();
    expect(storedEvents(server, orderId)).toHaveLength(3);
  });
});
