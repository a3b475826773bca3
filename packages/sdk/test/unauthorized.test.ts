// Issue 21 item 12: a verifier token Tollgate refuses is reported as such (reason UNAUTHORIZED, never valid, a 500
// from the middleware) and the default onError says so once, instead of a silent 503 "try again" on every request.
// Against a stub answering like Tollgate does for a bad token (401, code 205) or a token without the permission (403).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Tollgate, TollgateHttpError } from '../src/index.ts';
import { refusalOf } from '../src/guard.ts';

const TOKEN = 'wrong-token-0123456789';
let stub: Server;
let baseUrl: string;
let status = 401;
let infoCalls = 0;
const clients: Tollgate[] = [];

beforeAll(async () => {
  stub = createServer((request, response) => {
    if (request.url?.includes('/get_info')) infoCalls += 1;
    const envelope =
      status === 401
        ? { result: null, error: { message: 'Authentication failed: unknown admin API token or inactive staff member', code: 205 } }
        : status === 403
          ? { result: null, error: { message: 'You do not have the permission "serviceapikey.check"', code: 403 } }
          : { result: null, error: { message: 'Internal error', code: 500 } };
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(envelope));
  });
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
});
afterEach(async () => {
  status = 401;
  vi.restoreAllMocks();
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  stub.closeAllConnections();
  await new Promise((resolve) => stub.close(resolve));
});

function sdk(options: { failOpen?: boolean; onError?: (error: unknown, what: string) => void } = {}): Tollgate {
  const tollgate = new Tollgate({ baseUrl, token: TOKEN, reportIntervalMs: 60_000, ...options });
  clients.push(tollgate);
  return tollgate;
}

describe('a refused verifier token', () => {
  it('is reason UNAUTHORIZED and never valid, whatever failOpen says, for 401 and 403; not cached', async () => {
    for (const code of [401, 403]) {
      status = code;
      for (const failOpen of [false, true]) {
        const tollgate = sdk({ failOpen, onError: () => undefined });
        const before = infoCalls;
        expect(await tollgate.verify('SOME-KEY'), `${code} ${failOpen}`).toEqual({
          valid: false,
          reason: 'UNAUTHORIZED',
          orderId: null,
          keyId: null,
          config: null,
          usage: null,
          retryAfter: null,
        });
        expect((await tollgate.verify('SOME-KEY')).reason).toBe('UNAUTHORIZED');
        expect(infoCalls - before, 'asked again: a fixed token works at once').toBe(2);
      }
    }
  });

  it('reaches onError as a TollgateHttpError with its status, under "verifier token refused", without the token', async () => {
    const seen: Array<{ error: unknown; what: string }> = [];
    const tollgate = sdk({ onError: (error, what) => seen.push({ error, what }) });
    await tollgate.verify('SOME-KEY');
    const refused = seen.find(({ what }) => what === 'verifier token refused')?.error;
    if (!(refused instanceof TollgateHttpError)) throw new Error(`not a TollgateHttpError: ${String(refused)}`);
    expect(refused.status).toBe(401);
    expect(refused.message).toContain('unknown admin API token');
    expect(JSON.stringify(seen.map(({ error, what }) => [what, String(error)]))).not.toContain(TOKEN);
  });

  it('is logged once by the default onError (stderr), with what to do, never the token, however many requests fail', async () => {
    const lines: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => void lines.push(String(line)));
    const tollgate = sdk();
    for (let i = 0; i < 5; i++) await tollgate.verify(`KEY-${i}`);
    // The events stream is refused too (and retried): still the one line.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const refused = lines.filter((line) => line.includes('verifier token'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/^\[@tollgate\/sdk\] .*HTTP 401.*Developers → Verifier tokens/);
    expect(lines.join('\n')).not.toContain(TOKEN);
    expect(lines.length).toBeLessThanOrEqual(2);
  });

  it('makes the middleware answer 500 VERIFIER_UNAUTHORIZED (not 503 "try again"), while an outage stays 503 UNAVAILABLE', async () => {
    const tollgate = sdk({ onError: () => undefined });
    expect(refusalOf(await tollgate.verify('SOME-KEY'))).toEqual({
      status: 500,
      body: { error: { code: 'VERIFIER_UNAUTHORIZED', message: expect.stringContaining('verifier token') } },
      retryAfter: null,
    });
    status = 500;
    const outage = await sdk({ onError: () => undefined }).verify('SOME-KEY');
    expect(outage.reason).toBe('UNAVAILABLE');
    expect(refusalOf(outage)).toMatchObject({ status: 503, body: { error: { code: 'UNAVAILABLE' } }, retryAfter: 1 });
  });
});
