// The Express, Fastify and Hono adapters in real apps on real sockets, against a real Tollgate server process.
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tollgate, type VerifyResult } from '../src/index.ts';
import { tollgateExpress } from '../src/express.ts';
import { tollgateFastify } from '../src/fastify.ts';
import { tollgateHono } from '../src/hono.ts';
import { sellKey, startTollgate, type TollgateProcess } from './server.ts';

let server: TollgateProcess;
let tollgate: Tollgate;
let valid: string;
let limited: string;
let disabled: string;
const apps: Array<{ name: string; url: string; close: () => Promise<void> }> = [];

beforeAll(async () => {
  server = await startTollgate();
  tollgate = new Tollgate({ baseUrl: server.baseUrl, token: server.adminToken });
  valid = (await sellKey(server, { custom: { tier: 'pro' } })).key;
  limited = (await sellKey(server, { enforce_limit: true, custom: { monthlyLimit: 1 } })).key;
  const off = await sellKey(server);
  disabled = off.key;
  await server.admin('serviceapikey/update', { order_id: off.orderId, valid: false });

  const expressApp = express();
  expressApp.use(tollgateExpress(tollgate));
  expressApp.get('/hello', (req, res) => {
    res.json({ tier: (req as unknown as { tollgate: VerifyResult }).tollgate.config?.tier });
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
  fastifyApp.addHook('preHandler', tollgateFastify(tollgate));
  fastifyApp.get('/hello', async (request) => ({ tier: (request as unknown as { tollgate: VerifyResult }).tollgate.config?.tier }));
  const fastifyUrl = await fastifyApp.listen({ port: 0, host: '127.0.0.1' });
  apps.push({ name: 'fastify', url: fastifyUrl, close: () => fastifyApp.close() });

  const honoApp = new Hono<{ Variables: { tollgate: VerifyResult } }>();
  honoApp.use(tollgateHono(tollgate));
  honoApp.get('/hello', (c) => c.json({ tier: c.get('tollgate').config?.tier }));
  const honoServer: ServerType = await new Promise((resolve) => {
    const started = serve({ fetch: honoApp.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started));
  });
  apps.push({
    name: 'hono',
    url: `http://127.0.0.1:${(honoServer.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => honoServer.close(() => resolve())),
  });
}, 180_000);

afterAll(async () => {
  for (const app of apps) await app.close();
  await tollgate?.close();
  await server?.stop();
});

describe.each(['express', 'fastify', 'hono'])('%s middleware', (name) => {
  const get = async (headers: Record<string, string>) => {
    const app = apps.find((candidate) => candidate.name === name)!;
    const response = await fetch(`${app.url}/hello`, { headers });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Record<string, unknown> };
  };

  it('lets a valid key through (X-API-Key or Bearer) and attaches the result', async () => {
    expect(await get({ 'x-api-key': valid })).toMatchObject({ status: 200, body: { tier: 'pro' } });
    expect(await get({ authorization: `Bearer ${valid}` })).toMatchObject({ status: 200, body: { tier: 'pro' } });
  });

  it('answers 401 for a missing, empty, malformed or invalid key', async () => {
    const missing: Array<Record<string, string>> = [{}, { 'x-api-key': '' }, { 'x-api-key': '   ' }, { authorization: 'Bearer ' }, { authorization: 'Basic abc' }];
    for (const headers of missing) {
      expect(await get(headers), JSON.stringify(headers)).toMatchObject({ status: 401, body: { error: { code: 'MISSING_KEY' } } });
    }
    expect(await get({ 'x-api-key': 'FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF' })).toMatchObject({ status: 401, body: { error: { code: 'INVALID_KEY' } } });
    expect(await get({ 'x-api-key': disabled })).toMatchObject({ status: 401, body: { error: { code: 'INVALID_KEY' } } });
  });

  it('answers 429 LIMIT_EXCEEDED with Retry-After once the quota is used', async () => {
    // The limited key allows one use in total, shared by the three apps (one Tollgate instance).
    await get({ 'x-api-key': limited });
    const over = await get({ 'x-api-key': limited });
    expect(over).toMatchObject({ status: 429, body: { error: { code: 'LIMIT_EXCEEDED' } } });
    expect(Number(over.retryAfter)).toBeGreaterThan(0);
  });
});
