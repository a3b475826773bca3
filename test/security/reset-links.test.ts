// Issue 20, L1–L4: a reset link stops working once its account's password or address has changed (clients and
// staff, whoever made the change); a change of e-mail answers the same for a taken and a free address, and the
// truth goes to that address only; the per-address limit on reset requests never refuses the owner's own request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type Browser, type TestApp } from '../helpers/app.ts';
import { expectError, expectInvalid } from '../helpers/assertions.ts';
import { Mailbox } from '../helpers/mailbox.ts';
import { TestSmtp } from '../helpers/smtp.ts';

const PUBLIC_URL = 'https://billing.example.com';
const EXPIRED = 'The link has expired or you have already reset your password';
const STAFF_PASSWORD = 'Staff-Passw0rd-3';
const NEXT = 'Next-Passw0rd-4';

describe('reset links after a change of password or address', () => {
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

  async function staffMember(): Promise<{ id: number; email: string; browser: Browser }> {
    counter += 1;
    const email = `reset-staff-${counter}@example.com`;
    const id = (await t.admin('staff/create', { email, password: STAFF_PASSWORD, name: 'Reset Staff', admin_group_id: 1 })).result as number;
    return { id, email, browser: await t.login('staff', email, STAFF_PASSWORD) };
  }
  const clientLink = async (email: string): Promise<string> => {
    expect((await t.call('/api/guest/client/reset_password', { email })).result).toBe(true);
    return box.lastLink(email, '/', 'reset');
  };
  const staffLink = async (email: string): Promise<string> => {
    expect((await t.call('/api/guest/staff/passwordreset', { email })).result).toBe(true);
    return box.lastLink(email, '/admin', 'reset');
  };
  const useClientLink = (hash: string) => t.call('/api/guest/client/update_password', { hash, password: NEXT, password_confirm: NEXT });
  const useStaffLink = (hash: string) => t.call('/api/guest/staff/update_password', { hash, password: NEXT, password_confirm: NEXT });
  const expectDead = (reply: Awaited<ReturnType<typeof useClientLink>>): void => {
    expectError(reply, 422);
    expect(reply.body.error!.message).toBe(EXPIRED);
  };

  describe('L1: every password change voids outstanding reset links', () => {
    it('client/profile/change_password (the owner)', async () => {
      const client = await t.createClient();
      const link = await clientLink(client.email);
      const browser = await t.login('client', client.email, client.password);
      const changed = await t.call('/api/client/profile/change_password', { current_password: client.password, password: 'Own-Passw0rd-5', password_confirm: 'Own-Passw0rd-5' }, { browser, csrf: true });
      expect(changed.status).toBe(200);
      expectDead(await useClientLink(link));
      expect((await t.call('/api/guest/client/login', { email: client.email, password: 'Own-Passw0rd-5' })).status).toBe(200);
    });

    it('admin/client/change_password (staff)', async () => {
      const client = await t.createClient();
      const link = await clientLink(client.email);
      expect((await t.admin('client/change_password', { id: client.id, password: 'Staff-Set-Passw0rd6', password_confirm: 'Staff-Set-Passw0rd6' })).status).toBe(200);
      expectDead(await useClientLink(link));
    });

    it('admin/profile/change_password (the staff member)', async () => {
      const m = await staffMember();
      const link = await staffLink(m.email);
      const changed = await t.call('/api/admin/profile/change_password', { current_password: STAFF_PASSWORD, password: 'Own-Passw0rd-7', password_confirm: 'Own-Passw0rd-7' }, { browser: m.browser, csrf: true });
      expect(changed.status).toBe(200);
      expectDead(await useStaffLink(link));
    });

    it('admin/staff/change_password (another administrator)', async () => {
      const m = await staffMember();
      const link = await staffLink(m.email);
      expect((await t.admin('staff/change_password', { id: m.id, password: 'Set-By-Admin-8a', password_confirm: 'Set-By-Admin-8a' })).status).toBe(200);
      expectDead(await useStaffLink(link));
    });

    it("a refused change (wrong current password) voids nothing, and nobody else's links are touched", async () => {
      const client = await t.createClient();
      const bystander = await t.createClient();
      const link = await clientLink(client.email);
      const other = await clientLink(bystander.email);
      const browser = await t.login('client', client.email, client.password);
      expectInvalid(await t.call('/api/client/profile/change_password', { current_password: 'Wrong-Passw0rd9', password: 'Own-Passw0rd-5', password_confirm: 'Own-Passw0rd-5' }, { browser, csrf: true }), 'current_password');
      expect((await useClientLink(link)).status).toBe(200);
      expect((await useClientLink(other)).status).toBe(200);
    });
  });

  describe('L2: a confirmed change of e-mail voids outstanding reset links', () => {
    it('client: the link mailed to the old address dies when the new address is confirmed', async () => {
      const client = await t.createClient();
      const link = await clientLink(client.email);
      const fresh = `l2-client-${client.id}@example.com`;
      expect((await t.call('/api/client/profile/change_email', { email: fresh, password: client.password }, { basic: ['client', client.token] })).result).toBe(true);
      // Requested but not confirmed: the old link still works for now…
      const confirmation = await box.lastLink(fresh, '/', 'confirm-email');
      expect((await t.call('/api/guest/client/confirm_email', { hash: confirmation })).result).toBe(true);
      // …confirmed: it does not.
      expectDead(await useClientLink(link));
    });

    it('client: a change of address by staff (admin/client/update) voids it too', async () => {
      const client = await t.createClient();
      const link = await clientLink(client.email);
      expect((await t.admin('client/update', { id: client.id, email: `l2-by-staff-${client.id}@example.com` })).status).toBe(200);
      expectDead(await useClientLink(link));
    });

    it('staff: confirming admin/profile/change_email voids the link mailed to the old address', async () => {
      const m = await staffMember();
      const link = await staffLink(m.email);
      const fresh = `l2-staff-${m.id}@example.com`;
      expect((await t.call('/api/admin/profile/change_email', { email: fresh, password: STAFF_PASSWORD }, { browser: m.browser, csrf: true })).result).toBe(true);
      expect((await t.call('/api/guest/staff/confirm_email', { hash: await box.lastLink(fresh, '/admin', 'confirm-email') })).result).toBe(true);
      expectDead(await useStaffLink(link));
    });

    it('staff: a change of address by another administrator (admin/staff/update) voids it too', async () => {
      const m = await staffMember();
      const link = await staffLink(m.email);
      expect((await t.admin('staff/update', { id: m.id, email: `l2-staff-by-admin-${m.id}@example.com` })).status).toBe(200);
      expectDead(await useStaffLink(link));
    });

    it('saving a profile with the same address voids nothing', async () => {
      const client = await t.createClient();
      const link = await clientLink(client.email);
      expect((await t.admin('client/update', { id: client.id, email: client.email.toUpperCase(), first_name: 'Same' })).status).toBe(200);
      expect((await useClientLink(link)).status).toBe(200);
    });
  });

  describe('L3: change_email answers the same for a taken and a free address', () => {
    it('both → 200 true; the free address gets a link, the taken one a notice without a link; the requester sees neither', async () => {
      const client = await t.createClient();
      const owner = await t.createClient();
      const free = `l3-free-${client.id}@example.com`;
      const ask = (email: string) => t.call('/api/client/profile/change_email', { email, password: client.password }, { basic: ['client', client.token] });
      const before = (await box.to(owner.email)).length;
      const takenReply = await ask(owner.email);
      const freeReply = await ask(free);
      expect(takenReply.status).toBe(freeReply.status);
      expect(takenReply.body).toEqual(freeReply.body);
      expect(takenReply.body).toEqual({ result: true, error: null });

      const toOwner = await box.to(owner.email);
      expect(toOwner).toHaveLength(before + 1);
      expect(toOwner.at(-1)!.parsed.subject).toBe('This address already has an account');
      expect(box.linkIn(toOwner.at(-1)!, '/', 'confirm-email')).toBeNull();
      expect(box.linkIn(await box.last(free), '/', 'confirm-email')).not.toBeNull();
      // The requester's own message list shows neither message, so it cannot tell the two apart either.
      const list = await t.call('/api/client/email/get_list', {}, { basic: ['client', client.token] });
      expect(list.status).toBe(200);
      expect(JSON.stringify(list.result)).not.toContain(owner.email);
      expect(JSON.stringify(list.result)).not.toContain(free);
      // Nothing changed for either account.
      expect((await t.admin('client/get', { id: client.id })).result.email).toBe(client.email);
      expect((await t.admin('client/get', { id: owner.id })).result.email).toBe(owner.email);
    });
  });
});

describe('L4: the per-address reset limit never refuses the owner', () => {
  const smtp = new TestSmtp();
  let t: TestApp;
  let box: Mailbox;

  beforeAll(async () => {
    await smtp.start();
    t = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL, RATE_LIMIT_ENABLED: 'true' });
    box = new Mailbox(t, smtp, PUBLIC_URL);
  });
  afterAll(async () => {
    await t.close();
    await smtp.stop();
  });

  for (const kind of ['client', 'staff'] as const) {
    it(`${kind}: five requests naming the victim from one address; the victim's own request → true, and the last link mailed works`, async () => {
      let email: string;
      if (kind === 'client') email = (await t.createClient()).email;
      else {
        email = `l4-staff-${Date.now()}@example.com`;
        expect((await t.admin('staff/create', { email, password: STAFF_PASSWORD, name: 'Victim', admin_group_id: 1 })).status).toBe(200);
      }
      const path = kind === 'client' ? '/api/guest/client/reset_password' : '/api/guest/staff/passwordreset';
      const attacker = kind === 'client' ? '192.0.2.66' : '192.0.2.67';
      for (let i = 0; i < 5; i++) expect((await t.call(path, { email }, { ip: attacker })).result).toBe(true);
      // The requester is still limited per address: the attacker's sixth → 429.
      const limited = await t.call(path, { email }, { ip: attacker });
      expectError(limited, 429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      // The victim, from its own address: answered true, not 429; no sixth mail goes out…
      const own = await t.call(path, { email }, { ip: kind === 'client' ? '198.51.100.66' : '198.51.100.67' });
      expect(own.body).toEqual({ result: true, error: null });
      const mails = await box.to(email);
      expect(mails).toHaveLength(5);
      // …and the latest link in the mailbox was not voided by the dropped request: it works. (Mails may be delivered
      // out of order, so every link is tried: the newest works, each older one was voided when the next was issued.)
      const update = kind === 'client' ? '/api/guest/client/update_password' : '/api/guest/staff/update_password';
      const statuses: number[] = [];
      for (const mail of mails) {
        const token = box.linkIn(mail, kind === 'client' ? '/' : '/admin', 'reset');
        statuses.push((await t.call(update, { hash: token, password: NEXT, password_confirm: NEXT }, { ip: '198.51.100.99' })).status);
      }
      expect(statuses.filter((status) => status === 200)).toHaveLength(1);
      expect(statuses.filter((status) => status === 422)).toHaveLength(4);
    });
  }

  it('missing or malformed address → 422; GET → 405', async () => {
    expectInvalid(await t.call('/api/guest/client/reset_password', {}, { ip: '192.0.2.80' }), 'email');
    expectInvalid(await t.call('/api/guest/staff/passwordreset', { email: 'nope' }, { ip: '192.0.2.81' }), 'email');
    expectError(await t.call('/api/guest/client/reset_password', { email: 'a@example.com' }, { method: 'GET', ip: '192.0.2.82' }), 405);
  });
});
