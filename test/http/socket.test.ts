// The same API over a real TCP socket with fetch(): login cookies, a CSRF-protected call, Basic auth, the 404
// envelope, a real multipart form, and a chunked body over the limit.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type TestApp } from '../helpers/app.ts';

interface Envelope {
  result: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read arbitrary result shapes
  error: { message: string; code: number } | null;
}

describe('over a real socket', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp({ BODY_LIMIT_BYTES: '4096' });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t.close();
  });

  /** The `name=value` pairs of the Set-Cookie headers, ready for a Cookie header. */
  function cookieJar(response: Response): Record<string, string> {
    const jar: Record<string, string> = {};
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      jar[pair.slice(0, eq)] = decodeURIComponent(pair.slice(eq + 1));
    }
    return jar;
  }

  it('an unknown path answers the 404 envelope with the common headers', async () => {
    const response = await fetch(`${base}/api/guest/nothing/here`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-tollgate-version')).toMatch(/^\d+\.\d+\.\d+/);
    const body = (await response.json()) as Envelope;
    expect(body).toEqual({ result: null, error: { message: expect.any(String), code: 879 } });

    const put = await fetch(`${base}/api/guest/system/version`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(((await put.json()) as Envelope).error!.code).toBe(405);
  });

  it('staff login sets the cookies; a session call needs the CSRF token', async () => {
    const login = await fetch(`${base}/api/guest/staff/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
    });
    expect(login.status).toBe(200);
    expect(((await login.json()) as Envelope).result).toEqual({ id: 1, email: ADMIN_EMAIL, name: 'Administrator', role: 'admin' });
    const setCookie = login.headers.getSetCookie();
    expect(setCookie.find((line) => line.startsWith('tollgate_session='))).toMatch(/HttpOnly/i);
    const jar = cookieJar(login);
    const cookie = `tollgate_session=${jar.tollgate_session}; csrf_token=${jar.csrf_token}`;

    const refused = await fetch(`${base}/api/admin/profile/get`, { headers: { cookie } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Envelope).error!.code).toBe(403);

    const accepted = await fetch(`${base}/api/admin/profile/get`, { headers: { cookie, 'x-csrf-token': jar.csrf_token! } });
    expect(accepted.status).toBe(200);
    expect(((await accepted.json()) as Envelope).result.email).toBe(ADMIN_EMAIL);

    const logout = await fetch(`${base}/api/admin/profile/logout`, { method: 'POST', headers: { cookie, 'x-csrf-token': jar.csrf_token! } });
    expect(((await logout.json()) as Envelope).result).toBe(true);
    const after = await fetch(`${base}/api/admin/profile/get`, { headers: { cookie, 'x-csrf-token': jar.csrf_token! } });
    expect(((await after.json()) as Envelope).error!.code).toBe(201);
  });

  it('Basic credentials over the socket; a real multipart form reaches the action', async () => {
    const client = await t.createClient();
    const authorization = `Basic ${Buffer.from(`client:${client.token}`).toString('base64')}`;
    const form = new FormData();
    form.append('city', 'Lausanne');
    form.append('address[ignored]', 'x');
    form.append('attachment', new Blob(['file body']), 'notes.txt');
    const update = await fetch(`${base}/api/client/profile/update`, { method: 'POST', headers: { authorization }, body: form });
    expect(update.status).toBe(200);
    const own = await fetch(`${base}/api/client/profile/get`, { headers: { authorization } });
    expect(((await own.json()) as Envelope).result).toMatchObject({ id: client.id, city: 'Lausanne' });

    const urlencoded = await fetch(`${base}/api/client/profile/update`, {
      method: 'POST',
      headers: { authorization },
      body: new URLSearchParams({ city: 'Sion' }),
    });
    expect(urlencoded.status).toBe(200);
    expect((await t.admin('client/get', { id: client.id })).result.city).toBe('Sion');
  });

  it('a chunked multipart body over the limit (no Content-Length) → 413', async () => {
    const client = await t.createClient();
    const boundary = 'socket-boundary-1234';
    const status = await new Promise<{ code: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${base}/api/client/profile/update`, {
        method: 'POST',
        headers: {
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'transfer-encoding': 'chunked',
          authorization: `Basic ${Buffer.from(`client:${client.token}`).toString('base64')}`,
        },
      });
      req.on('response', (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ code: response.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="city"\r\n\r\n`);
      for (let i = 0; i < 10; i++) req.write('x'.repeat(1000));
      req.end(`\r\n--${boundary}--\r\n`);
    });
    expect(status.code).toBe(413);
    expect((JSON.parse(status.body) as Envelope).error!.code).toBe(413);
    expect((await t.admin('client/get', { id: client.id })).result.city).toBeNull();
  });
});
