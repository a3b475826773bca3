// Issue 20, M4: a staff member's e-mail address (where reset links go) changes only with the current password, the
// second factor when it is on, and a link mailed to the new address (admin/profile/change_email, then
// guest/staff/confirm_email); the old address is told. admin/profile/update and admin/staff/update refuse a new
// address of one's own with 422 naming the new action.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../../src/modules/account/two-factor.ts';
import { createTestApp, type Browser, type TestApp } from '../helpers/app.ts';
import { expectError, expectInvalid } from '../helpers/assertions.ts';
import { Mailbox } from '../helpers/mailbox.ts';
import { TestSmtp } from '../helpers/smtp.ts';

const PUBLIC_URL = 'https://billing.example.com';
const PASSWORD = 'Staff-Passw0rd-1';

describe('staff change of e-mail', () => {
  const smtp = new TestSmtp();
  let t: TestApp;
  let box: Mailbox;
  let counter = 0;

  beforeAll(async () => {
    await smtp.start();
    t = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL });
    box = new Mailbox(t, smtp, PUBLIC_URL);
  });
  afterAll(async () => {
    await t.close();
    await smtp.stop();
  });

  /** An administrator with a password, a logged-in browser and an API token. */
  async function member(group = 1): Promise<{ id: number; email: string; browser: Browser; token: string }> {
    counter += 1;
    const email = `staff-mail-${counter}@example.com`;
    const created = await t.admin('staff/create', { email, password: PASSWORD, name: `Member ${counter}`, admin_group_id: group });
    expect(created.status).toBe(200);
    const id = created.result as number;
    return { id, email, browser: await t.login('staff', email, PASSWORD), token: (await t.services.staff.profile(id)).api_token };
  }
  const change = (who: { browser: Browser }, params: Record<string, unknown>) => t.call('/api/admin/profile/change_email', params, { browser: who.browser, csrf: true });
  const confirm = (hash: string) => t.call('/api/guest/staff/confirm_email', { hash });
  const emailOf = async (id: number): Promise<string> => (await t.services.staff.get(id)).email;

  it('mails a link to <PUBLIC_URL>/admin#/confirm-email/<token>; the address changes when it is followed, once; the old address is told', async () => {
    const m = await member();
    const fresh = `moved-${m.id}@example.com`;
    expect((await change(m, { email: fresh, password: PASSWORD })).body).toEqual({ result: true, error: null });
    const token = await box.lastLink(fresh, '/admin', 'confirm-email');
    // Nothing changes before the link is followed, and the old address has had no mail yet.
    expect(await emailOf(m.id)).toBe(m.email);
    expect(await box.to(m.email)).toHaveLength(0);

    expect((await confirm(token)).body).toEqual({ result: true, error: null });
    expect(await emailOf(m.id)).toBe(fresh);
    const notice = await box.last(m.email);
    expect(notice.parsed.subject).toBe('Your staff e-mail address was changed');
    expect(notice.parsed.text).toContain(fresh);
    expect(box.linkIn(notice, '/admin', 'confirm-email')).toBeNull();
    expect((await t.call('/api/guest/staff/login', { email: fresh, password: PASSWORD })).status).toBe(200);
    expectError(await t.call('/api/guest/staff/login', { email: m.email, password: PASSWORD }), 206, 401);
    // The link works once.
    expectInvalid(await confirm(token), 'hash');
  });

  it('works with the API token too, and a second request voids the first link', async () => {
    const m = await member();
    const first = `first-${m.id}@example.com`;
    const second = `second-${m.id}@example.com`;
    const byToken = (email: string) => t.call('/api/admin/profile/change_email', { email, password: PASSWORD }, { basic: ['admin', m.token] });
    expect((await byToken(first)).result).toBe(true);
    const stale = await box.lastLink(first, '/admin', 'confirm-email');
    expect((await byToken(second)).result).toBe(true);
    const live = await box.lastLink(second, '/admin', 'confirm-email');
    expectInvalid(await confirm(stale), 'hash');
    expect((await confirm(live)).result).toBe(true);
    expect(await emailOf(m.id)).toBe(second);
  });

  it('a wrong or missing password, the same address, bad input → 422; GET → 405; no credentials → 401; a client token → 401; no CSRF → 403', async () => {
    const m = await member();
    expectInvalid(await change(m, { email: 'x1@example.com', password: 'Wrong-Passw0rd' }), 'password');
    expectInvalid(await change(m, { email: 'x1@example.com' }), 'password');
    expectInvalid(await change(m, { email: 'x1@example.com', password: 42 }), 'password');
    expectInvalid(await change(m, { password: PASSWORD }), 'email');
    expectInvalid(await change(m, { email: 'not-an-address', password: PASSWORD }), 'email');
    expectInvalid(await change(m, { email: m.email.toUpperCase(), password: PASSWORD }), 'email');
    expectInvalid(await change(m, { email: 'x1@example.com', password: PASSWORD, code: 123456 }), 'code');
    expectError(await t.call('/api/admin/profile/change_email', { email: 'x1@example.com', password: PASSWORD }, { method: 'GET', basic: ['admin', m.token] }), 405);
    expectError(await t.call('/api/admin/profile/change_email', { email: 'x1@example.com', password: PASSWORD }), 201, 401);
    const client = await t.createClient();
    expectError(await t.call('/api/admin/profile/change_email', { email: 'x1@example.com', password: PASSWORD }, { basic: ['client', client.token] }), 203, 401);
    expectError(await t.call('/api/admin/profile/change_email', { email: 'x1@example.com', password: PASSWORD }, { browser: m.browser }), 403);
    expect(await box.to('x1@example.com')).toHaveLength(0);
    expect(await emailOf(m.id)).toBe(m.email);
  });

  it('with two-factor login on, a code is needed: missing or wrong → 422 on code; the right one → 200', async () => {
    const m = await member();
    const setup = await t.call('/api/admin/profile/totp_setup', {}, { browser: m.browser, csrf: true });
    // Far from a step's edge: the codes below are judged in the step they were computed for.
    if (Date.now() % 30_000 > 28_000) await new Promise((resolve) => setTimeout(resolve, 2100));
    const secret = setup.result.secret as string;
    expect((await t.call('/api/admin/profile/totp_enable', { code: totpCode(secret, Date.now()) }, { browser: m.browser, csrf: true })).status).toBe(200);
    const fresh = `with-code-${m.id}@example.com`;
    expectInvalid(await change(m, { email: fresh, password: PASSWORD }), 'code');
    expectInvalid(await change(m, { email: fresh, password: PASSWORD, code: '' }), 'code');
    const right = totpCode(secret, Date.now(), 1);
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
    expectInvalid(await change(m, { email: fresh, password: PASSWORD, code: wrong }), 'code');
    expect(await box.to(fresh)).toHaveLength(0);
    // The wrong code counted against the account's second-factor ceiling (M5).
    const counted = await t.services.db.selectFrom('account_second_factor_failures').select('failures').where('subject_type', '=', 'admin').where('subject_id', '=', m.id).executeTakeFirst();
    expect(counted?.failures).toBe(1);
    expect((await change(m, { email: fresh, password: PASSWORD, code: right })).result).toBe(true);
    expect((await confirm(await box.lastLink(fresh, '/admin', 'confirm-email'))).result).toBe(true);
    expect(await emailOf(m.id)).toBe(fresh);
  });

  it("another staff member's address is answered like a free one; that address is told it is in use, with no link", async () => {
    const m = await member();
    const other = await member();
    const before = (await box.to(other.email)).length;
    const reply = await change(m, { email: other.email.toUpperCase(), password: PASSWORD });
    expect(reply.body).toEqual({ result: true, error: null });
    const mails = await box.to(other.email);
    expect(mails).toHaveLength(before + 1);
    expect(mails.at(-1)!.parsed.subject).toBe('This address already has an account');
    expect(box.linkIn(mails.at(-1)!, '/admin', 'confirm-email')).toBeNull();
    expect(await emailOf(m.id)).toBe(m.email);
  });

  it('admin/profile/update and admin/staff/update refuse a new address of your own with 422 naming change_email; staff.manage still edits others', async () => {
    const m = await member();
    const other = await member();
    const viaProfile = await t.call('/api/admin/profile/update', { email: 'sneaky@example.com' }, { basic: ['admin', m.token] });
    expectInvalid(viaProfile, 'email');
    expect(viaProfile.body.error!.message).toContain('admin/profile/change_email');
    const viaStaff = await t.call('/api/admin/staff/update', { id: m.id, email: 'sneaky@example.com' }, { basic: ['admin', m.token] });
    expectInvalid(viaStaff, 'email');
    expect(viaStaff.body.error!.message).toContain('admin/profile/change_email');
    expect(await emailOf(m.id)).toBe(m.email);
    // The same address passes (forms send every field); another member's address is a staff.manage matter.
    expect((await t.call('/api/admin/staff/update', { id: m.id, email: m.email, name: 'Renamed' }, { basic: ['admin', m.token] })).result).toBe(true);
    const moved = `moved-by-admin-${other.id}@example.com`;
    expect((await t.call('/api/admin/staff/update', { id: other.id, email: moved }, { basic: ['admin', m.token] })).result).toBe(true);
    expect(await emailOf(other.id)).toBe(moved);
  });

  it('confirm_email: a wrong, malformed or client link → 422 on hash; an address taken meanwhile → 409; GET works (no credentials in it)', async () => {
    expectInvalid(await confirm('A'.repeat(43)), 'hash');
    expectInvalid(await confirm(''), 'hash');
    expectInvalid(await t.call('/api/guest/staff/confirm_email', {}), 'hash');
    expectInvalid(await t.call('/api/guest/staff/confirm_email', { hash: 7 }), 'hash');
    // A client's change link is not a staff link, nor the other way round.
    const client = await t.createClient();
    const clientFresh = `client-moved-${client.id}@example.com`;
    expect((await t.call('/api/client/profile/change_email', { email: clientFresh, password: client.password }, { basic: ['client', client.token] })).result).toBe(true);
    const clientLink = await box.lastLink(clientFresh, '/', 'confirm-email');
    expectInvalid(await confirm(clientLink), 'hash');
    const m = await member();
    const wanted = `contested-${m.id}@example.com`;
    expect((await change(m, { email: wanted, password: PASSWORD })).result).toBe(true);
    const staffLink = await box.lastLink(wanted, '/admin', 'confirm-email');
    expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: staffLink }), 'hash');
    // Someone else takes the address before the link is followed.
    expect((await t.admin('staff/create', { email: wanted, password: PASSWORD, name: 'Squatter', admin_group_id: 1 })).status).toBe(200);
    expectError(await t.call('/api/guest/staff/confirm_email', { hash: staffLink }, { method: 'GET' }), 409);
    expect(await emailOf(m.id)).toBe(m.email);
    // The client link still works for the client.
    expect((await t.call('/api/guest/client/confirm_email', { hash: clientLink })).result).toBe(true);
  });

  it('two confirmations racing with one link: one succeeds, the other → 422; one notice to the old address', async () => {
    const m = await member();
    const fresh = `raced-${m.id}@example.com`;
    expect((await change(m, { email: fresh, password: PASSWORD })).result).toBe(true);
    const token = await box.lastLink(fresh, '/admin', 'confirm-email');
    const replies = await Promise.all(Array.from({ length: 5 }, () => confirm(token)));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    for (const reply of replies) if (reply.status !== 200) expectInvalid(reply, 'hash');
    expect((await box.to(m.email)).filter((mail) => mail.parsed.subject === 'Your staff e-mail address was changed')).toHaveLength(1);
  });

  it('a member deactivated before following the link: the link does nothing (422)', async () => {
    const m = await member();
    const fresh = `inactive-${m.id}@example.com`;
    expect((await change(m, { email: fresh, password: PASSWORD })).result).toBe(true);
    const token = await box.lastLink(fresh, '/admin', 'confirm-email');
    expect((await t.admin('staff/update', { id: m.id, status: 'inactive' })).status).toBe(200);
    expectInvalid(await confirm(token), 'hash');
    expect(await emailOf(m.id)).toBe(m.email);
  });
});
