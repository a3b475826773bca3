// tollgate.portalSession() against a real Tollgate process (issue 25 item 7): a verifier token with the `portal`
// scope gets a single-use link to one client's portal with the scopes, return URL and lifetime asked; the link opens
// once (guest/portal/open, as the portal page does); refusals — a token without the scope, an unknown client, bad
// scopes, a lifetime out of bounds, a bad return URL — are TollgateHttpErrors carrying Tollgate's message.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Tollgate, TollgateHttpError } from '../src/index.ts';
import { startTollgate, type TollgateProcess } from './server.ts';

let server: TollgateProcess;
let portalToken: string;
let plainToken: string;
let clientId: number;
const clients: Tollgate[] = [];

function sdk(token: string): Tollgate {
  const tollgate = new Tollgate({ baseUrl: server.baseUrl, token, reportIntervalMs: 60_000, onError: () => undefined });
  clients.push(tollgate);
  return tollgate;
}

async function refusal(promise: Promise<unknown>): Promise<TollgateHttpError> {
  const error = await promise.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(TollgateHttpError);
  return error as TollgateHttpError;
}

beforeAll(async () => {
  server = await startTollgate();
  portalToken = ((await server.admin('staff/verifier_create', { name: 'App (portal)', scopes: ['portal'] })).result as { token: string }).token;
  plainToken = ((await server.admin('staff/verifier_create', { name: 'App' })).result as { token: string }).token;
  clientId = (await server.admin('client/create', { email: 'portal-sdk@example.com', first_name: 'Ada', password: 'Client-Passw0rd' })).result as number;
}, 180_000);
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await server?.stop();
});

describe('portalSession', () => {
  it('makes a single-use link with the scopes, return URL and lifetime asked', async () => {
    const before = Date.now();
    const session = await sdk(portalToken).portalSession(clientId, ['invoices', 'keys'], { returnUrl: 'https://app.example.com/billing', expiresIn: 300 });
    expect(session).toEqual({
      id: expect.any(Number),
      url: expect.stringMatching(/\/portal#token=[A-Za-z0-9_-]{40,}$/),
      clientId,
      scopes: ['keys', 'invoices'],
      returnUrl: 'https://app.example.com/billing',
      expiresAt: expect.any(String),
    });
    expect(Date.parse(session.expiresAt) - before).toBeLessThanOrEqual(301_000);
    const token = session.url.split('#token=')[1];
    const open = () => fetch(`${server.baseUrl}/api/guest/portal/open`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    expect((await open()).status).toBe(200);
    expect((await open()).status).toBe(422);
  });

  it('defaults to every scope and 15 minutes', async () => {
    const session = await sdk(portalToken).portalSession(clientId);
    expect(session.scopes).toEqual(['keys', 'usage', 'invoices', 'wallet']);
    expect(session.returnUrl).toBeNull();
    expect(Date.parse(session.expiresAt) - Date.now()).toBeGreaterThan(800_000);
  });

  it("refusals are TollgateHttpErrors with Tollgate's message", async () => {
    const withScope = sdk(portalToken);
    const noScope = await refusal(sdk(plainToken).portalSession(clientId));
    expect(noScope.status).toBe(403);
    expect((await refusal(withScope.portalSession(99_999_999))).status).toBe(404);
    const badScope = await refusal(withScope.portalSession(clientId, ['profile' as 'keys']));
    expect(badScope.status).toBe(422);
    expect(badScope.message).toContain('scopes');
    expect((await refusal(withScope.portalSession(clientId, undefined, { expiresIn: 10 }))).message).toContain('expires_in');
    expect((await refusal(withScope.portalSession(clientId, undefined, { returnUrl: 'javascript:alert(1)' }))).message).toContain('return_url');
    await expect(withScope.portalSession(0)).rejects.toThrow(TypeError);
  });
});
