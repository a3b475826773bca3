// Client accounts (CONTRACT §6 clients): sign-up, staff management of clients, list filters and order, the
// record shape.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const PASSWORD = 'Client-Passw0rd';

describe('clients', () => {
  let t: TestApp;

  const unique = (): string => randomBytes(4).toString('hex');
  const total = async (filters: Record<string, unknown> = {}): Promise<number> => (await t.admin('client/get_list', filters)).result.total as number;

  beforeAll(async () => {
    t = await createTestApp();
    // A client's currency is one of the instance's (issue 26): the ones these tests give exist.
    for (const code of ['EUR', 'CHF']) await t.services.currencies.create({ code, conversion_rate: '1' }, null);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('guest/client/create (sign-up)', () => {
    it('creates an active client, returns its id and starts its session', async () => {
      const email = `signup-${unique()}@example.com`;
      const browser = new Browser();
      const reply = await t.call(
        '/api/guest/client/create',
        { email, first_name: 'Sign', last_name: 'Up', company: 'Upward', password: PASSWORD, password_confirm: PASSWORD, city: 'Chur' },
        { browser },
      );
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(Number.isInteger(reply.result)).toBe(true);
      expect(browser.cookies.tollgate_session).toBeDefined();
      expect(browser.cookies.csrf_token).toBeDefined();
      const own = await t.call('/api/client/profile/get', {}, { browser, csrf: true });
      expect(own.result).toMatchObject({ id: reply.result, email, first_name: 'Sign', last_name: 'Up', company: 'Upward', city: 'Chur', status: 'active' });
      // The new client has an API token from creation.
      expect((await t.call('/api/client/profile/api_key_get', {}, { browser, csrf: true })).result).toMatch(/^[A-Za-z0-9]{32}$/);
      // And can log in with the password.
      expect((await t.call('/api/guest/client/login', { email, password: PASSWORD })).status).toBe(200);
    });

    it('sign-up ignores a status parameter', async () => {
      const email = `signup-${unique()}@example.com`;
      const reply = await t.call('/api/guest/client/create', { email, first_name: 'S', password: PASSWORD, password_confirm: PASSWORD, status: 'canceled' });
      expect((await t.admin('client/get', { id: reply.result })).result.status).toBe('active');
    });

    it('password mismatch → 422; weak password → 422; nothing written', async () => {
      const before = await total();
      const base = { email: `signup-${unique()}@example.com`, first_name: 'S' };
      const mismatch = await t.call('/api/guest/client/create', { ...base, password: PASSWORD, password_confirm: 'Other-Passw0rd' });
      expectInvalid(mismatch, 'password_confirm');
      expect(mismatch.headers['set-cookie']).toBeUndefined();
      expectInvalid(await t.call('/api/guest/client/create', { ...base, password: 'weak', password_confirm: 'weak' }), 'password');
      expectInvalid(await t.call('/api/guest/client/create', { ...base, password: PASSWORD }), 'password_confirm');
      expectInvalid(await t.call('/api/guest/client/create', { ...base, password_confirm: PASSWORD }), 'password');
      expectInvalid(await t.call('/api/guest/client/create', { email: base.email, password: PASSWORD, password_confirm: PASSWORD }), 'first_name');
      expectInvalid(await t.call('/api/guest/client/create', { first_name: 'S', password: PASSWORD, password_confirm: PASSWORD }), 'email');
      expectInvalid(await t.call('/api/guest/client/create', { ...base, email: 'not an email', password: PASSWORD, password_confirm: PASSWORD }), 'email');
      expect(await total()).toBe(before);
    });

    it('a duplicate e-mail, in any case → 409', async () => {
      const existing = await t.createClient();
      const before = await total();
      for (const email of [existing.email, existing.email.toUpperCase()]) {
        expectError(await t.call('/api/guest/client/create', { email, first_name: 'Dup', password: PASSWORD, password_confirm: PASSWORD }), 409, 409);
        expectError(await t.admin('client/create', { email, first_name: 'Dup' }), 409, 409);
      }
      expect(await total()).toBe(before);
    });
  });

  describe('concurrency', () => {
    it('concurrent sign-ups with one e-mail: exactly one succeeds, the others → 409', async () => {
      const email = `race-${unique()}@example.com`;
      const replies = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          t.call('/api/guest/client/create', { email: i % 2 === 0 ? email : email.toUpperCase(), first_name: 'Race', password: PASSWORD, password_confirm: PASSWORD }),
        ),
      );
      expect(replies.map((reply) => reply.status).toSorted((a, b) => a - b)).toEqual([200, 409, 409, 409]);
      expect(await total({ email })).toBe(1);
    });

    it('concurrent updates to one e-mail: exactly one succeeds, the other → 409', async () => {
      const first = await t.createClient();
      const second = await t.createClient();
      const email = `race-update-${unique()}@example.com`;
      const replies = await Promise.all([t.admin('client/update', { id: first.id, email }), t.admin('client/update', { id: second.id, email })]);
      expect(replies.map((reply) => reply.status).toSorted((a, b) => a - b)).toEqual([200, 409]);
    });
  });

  describe('admin/client', () => {
    it('create with only the required fields: every field present, blanks null', async () => {
      const email = `Minimal-${unique()}@Example.com`;
      const reply = await t.admin('client/create', { email, first_name: 'Min' });
      expect(reply.status).toBe(200);
      const record = (await t.admin('client/get', { id: reply.result })).result as Record<string, unknown>;
      expect(record).toEqual({
        id: reply.result,
        email: email.toLowerCase(),
        first_name: 'Min',
        last_name: null,
        company: null,
        phone: null,
        address_1: null,
        address_2: null,
        city: null,
        state: null,
        postcode: null,
        country: null,
        currency: 'USD',
        vat_number: null,
        tax_exempt: false,
        status: 'active',
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
    });

    it('create with every field, status and a lower-case currency', async () => {
      const email = `full-${unique()}@example.com`;
      const fields = {
        first_name: 'Grace',
        last_name: 'Hopper',
        company: 'Navy',
        phone: '+1 212 555 0100',
        address_1: '1 Main St',
        address_2: 'Suite 2',
        city: 'Arlington',
        state: 'VA',
        postcode: '22201',
        country: 'US',
      };
      const reply = await t.admin('client/create', { email, ...fields, currency: 'eur', status: 'suspended', password: PASSWORD });
      const record = (await t.admin('client/get', { id: reply.result })).result;
      expect(record).toMatchObject({ ...fields, email, currency: 'EUR', status: 'suspended' });
      expect(record.created_at).toBe(record.updated_at);
      for (const key of Object.keys(record)) expect(key).not.toMatch(/password|token|hash/);
    });

    it('get of an unknown client → 404', async () => {
      expectError(await t.admin('client/get', { id: 999_999 }), 404, 404);
    });

    it('update changes fields, clears blanks, refuses a taken e-mail', async () => {
      const a = await t.createClient({ company: 'Old Co', city: 'Old Town' });
      const b = await t.createClient();
      const newEmail = `updated-${unique()}@example.com`;
      const reply = await t.admin('client/update', { id: a.id, email: newEmail.toUpperCase(), first_name: 'New', company: '', city: 'New Town', currency: 'chf' });
      expect(reply.body).toEqual({ result: true, error: null });
      const record = (await t.admin('client/get', { id: a.id })).result;
      expect(record).toMatchObject({ email: newEmail, first_name: 'New', company: null, city: 'New Town', currency: 'CHF' });
      expect(record.updated_at >= record.created_at).toBe(true);

      expectError(await t.admin('client/update', { id: a.id, email: b.email }), 409, 409);
      expectError(await t.admin('client/update', { id: a.id, email: b.email.toUpperCase() }), 409, 409);
      expectError(await t.admin('client/update', { id: 999_999, first_name: 'x' }), 404, 404);
      expectInvalid(await t.admin('client/update', { id: a.id, first_name: '' }), 'first_name');
      expectInvalid(await t.admin('client/update', { id: a.id, status: 'deleted' }), 'status');
      expectInvalid(await t.admin('client/update', { first_name: 'x' }), 'id');
      expect((await t.admin('client/get', { id: a.id })).result.email).toBe(newEmail);
      // Their own e-mail again is not a conflict.
      expect((await t.admin('client/update', { id: a.id, email: newEmail })).result).toBe(true);
    });

    it('delete returns true, the record and its token are gone', async () => {
      const a = await t.createClient();
      const browser = await t.login('client', a.email, a.password);
      expect((await t.admin('client/delete', { id: a.id })).body).toEqual({ result: true, error: null });
      expectError(await t.admin('client/get', { id: a.id }), 404, 404);
      expectError(await t.admin('client/delete', { id: a.id }), 404, 404);
      expectError(await t.call('/api/client/profile/get', {}, { basic: ['client', a.token] }), 204, 401);
      expectError(await t.call('/api/client/profile/get', {}, { browser, csrf: true }), 201, 401);
      // The e-mail is free again.
      expect((await t.admin('client/create', { email: a.email, first_name: 'Again' })).status).toBe(200);
    });

    it('change_password sets a password that logs in', async () => {
      const created = await t.admin('client/create', { email: `pw-${unique()}@example.com`, first_name: 'Pw' });
      const id = created.result as number;
      const { email } = (await t.admin('client/get', { id })).result as { email: string };
      expectInvalid(await t.admin('client/change_password', { id, password: 'Good-Passw0rd', password_confirm: 'Bad-Passw0rd' }), 'password_confirm');
      expectInvalid(await t.admin('client/change_password', { id, password: 'weak', password_confirm: 'weak' }), 'password');
      expectError(await t.admin('client/change_password', { id: 999_999, password: 'Good-Passw0rd', password_confirm: 'Good-Passw0rd' }), 404, 404);
      expect((await t.admin('client/change_password', { id, password: 'Good-Passw0rd', password_confirm: 'Good-Passw0rd' })).result).toBe(true);
      expect((await t.call('/api/guest/client/login', { email, password: 'Good-Passw0rd' })).status).toBe(200);
    });
  });

  describe('admin/client/get_list', () => {
    const tag = unique();
    const ids: Record<string, number> = {};

    beforeAll(async () => {
      const make = async (key: string, fields: Record<string, unknown>, createdAt: string): Promise<void> => {
        const reply = await t.admin('client/create', { email: `${key}-${tag}@list.example.com`, first_name: 'List', ...fields });
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
        ids[key] = reply.result as number;
        await t.services.db.updateTable('clients').set({ created_at: createdAt }).where('id', '=', ids[key]).execute();
      };
      await make('alpha', { last_name: `Zeta${tag}`, company: `Acme ${tag}` }, '2024-01-10T08:00:00Z');
      await make('beta', { first_name: `Beta${tag}`, company: `Globex ${tag}`, status: 'suspended' }, '2024-02-15T12:00:00Z');
      await make('gamma', { company: `acme ${tag} ltd` }, '2024-03-20T23:59:59Z');
      await make('delta', { status: 'canceled' }, '2024-03-21T00:00:00Z');
    });

    const listIds = async (filters: Record<string, unknown>): Promise<number[]> => {
      const reply = await t.admin('client/get_list', { ...filters, per_page: 500 });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      return (reply.result.list as Array<{ id: number }>).map((record) => record.id);
    };

    it('search matches e-mail, names and company, case-insensitively; newest first', async () => {
      expect(await listIds({ search: tag })).toEqual([ids.delta, ids.gamma, ids.beta, ids.alpha]);
      expect(await listIds({ search: `ACME ${tag}` })).toEqual([ids.gamma, ids.alpha]);
      expect(await listIds({ search: `zeta${tag}` })).toEqual([ids.alpha]);
      expect(await listIds({ search: String(ids.beta) })).toContain(ids.beta);
    });

    it('filters by status, email, name, company', async () => {
      expect(await listIds({ search: tag, status: 'suspended' })).toEqual([ids.beta]);
      expect(await listIds({ search: tag, status: 'canceled' })).toEqual([ids.delta]);
      expect(await listIds({ search: tag, status: 'active' })).toEqual([ids.gamma, ids.alpha]);
      expect(await listIds({ email: `ALPHA-${tag}` })).toEqual([ids.alpha]);
      expect(await listIds({ name: `beta${tag}` })).toEqual([ids.beta]);
      expect(await listIds({ name: `Zeta${tag}` })).toEqual([ids.alpha]);
      expect(await listIds({ company: `globex ${tag}` })).toEqual([ids.beta]);
      expect(await listIds({ company: `Acme ${tag}`, status: 'active' })).toEqual([ids.gamma, ids.alpha]);
    });

    it('filters by date_from and date_to (whole days, inclusive)', async () => {
      expect(await listIds({ search: tag, date_from: '2024-02-15' })).toEqual([ids.delta, ids.gamma, ids.beta]);
      expect(await listIds({ search: tag, date_to: '2024-02-15' })).toEqual([ids.beta, ids.alpha]);
      expect(await listIds({ search: tag, date_from: '2024-03-20', date_to: '2024-03-20' })).toEqual([ids.gamma]);
      expect(await listIds({ search: tag, date_from: '2025-01-01' })).toEqual([]);
    });

    it('paginates', async () => {
      const first = (await t.admin('client/get_list', { search: tag, per_page: 3 })).result;
      expect(first).toMatchObject({ page: 1, per_page: 3, pages: 2, total: 4 });
      expect(first.list.map((record: { id: number }) => record.id)).toEqual([ids.delta, ids.gamma, ids.beta]);
      const second = (await t.admin('client/get_list', { search: tag, per_page: 3, page: 2 })).result;
      expect(second.list.map((record: { id: number }) => record.id)).toEqual([ids.alpha]);
      expect((await t.admin('client/get_list', { search: tag, per_page: 3, page: 3 })).result).toEqual({ list: [], page: 3, per_page: 3, pages: 2, total: 4 });
      const record = first.list[0] as Record<string, unknown>;
      expect(Object.keys(record)).toHaveLength(18);
    });

    it('bad filters → 422 naming the parameter', async () => {
      expectInvalid(await t.admin('client/get_list', { status: 'gone' }), 'status');
      expectInvalid(await t.admin('client/get_list', { date_from: '2024-13-45' }), 'date_from');
      expectInvalid(await t.admin('client/get_list', { date_to: 'yesterday' }), 'date_to');
      expectInvalid(await t.admin('client/get_list', { date_from: '2024-02-30' }), 'date_from');
      expectInvalid(await t.admin('client/get_list', { date_to: '2023-02-29' }), 'date_to');
      expectInvalid(await t.admin('client/get_list', { date_to: '2024-03-20T00:00:00Z' }), 'date_to');
      expect((await t.admin('client/get_list', { date_from: '2024-02-29' })).status).toBe(200);
      expectInvalid(await t.admin('client/get_list', { per_page: 0 }), 'per_page');
      expectInvalid(await t.admin('client/get_list', { per_page: 501 }), 'per_page');
      expectInvalid(await t.admin('client/get_list', { page: 0 }), 'page');
      expectInvalid(await t.admin('client/get_list', { search: 5 }), 'search');
      expectInvalid(await t.admin('client/get_list', { email: ['a'] }), 'email');
    });

    it('newest first by creation time, then by id', async () => {
      const list = (await t.admin('client/get_list', { per_page: 500 })).result.list as Array<{ id: number; created_at: string }>;
      for (let i = 1; i < list.length; i++) {
        const [previous, current] = [list[i - 1]!, list[i]!];
        expect(previous.created_at > current.created_at || (previous.created_at === current.created_at && previous.id > current.id)).toBe(true);
      }
    });
  });
});
