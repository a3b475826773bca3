// Issue 25, "Bad input and safety": the IDOR sweep over a customer-portal session. For every client and admin action
// in the registry, a portal session of client A gets 401 (admin: a portal session is a client's) or 403 (a client
// action none of its scopes opens) — and for the actions its scopes open, client B's records are 404 and B's data
// appears in no answer. Run for a session with every scope and for one with each scope alone, so an action that is
// added later is refused until someone opens it in src/modules/portal/scopes.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listActions } from '../../src/http/gateway.ts';
import { modules } from '../../src/modules/index.ts';
import { PORTAL_SCOPE_ACTIONS, PORTAL_SCOPES } from '../../src/modules/portal/scopes.ts';
import { createTestApp, type Browser, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';
import { inSession, portalSession } from '../helpers/portal.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';

interface Records {
  clientId: number;
  email: string;
  orderId: number;
  keyId: number;
  key: string;
  invoiceId: number;
  invoiceHash: string;
  creditNoteId: number;
}

describe('portal session IDOR sweep', () => {
  let t: TestApp;
  let a: Records;
  let b: Records;

  /** A client with an API key order, a paid invoice and a credit note on it: records of every kind a scope shows. */
  async function clientWithRecords(): Promise<Records> {
    const client = await t.createClient();
    const plan = await createPlan(t, {});
    const { orderId, keyId, key } = await buyKey(t, plan, client.id);
    const priced = await makeProduct(t);
    const ordered = await t.admin('order/create', { client_id: client.id, product_id: priced, period: '1M', invoice_option: 'issue-invoice' });
    expect(ordered.body.error, JSON.stringify(ordered.body)).toBeNull();
    const invoice = (await t.admin('invoice/get_list', { client_id: client.id })).result.list[0] as { id: number; hash: string };
    expect((await t.admin('invoice/mark_as_paid', { id: invoice.id })).body.error).toBeNull();
    const note = await t.admin('invoice/credit_note_create', { invoice_id: invoice.id, reason: 'Goodwill', amount: '1.00' });
    expect(note.body.error, JSON.stringify(note.body)).toBeNull();
    const noteId = typeof note.result === 'number' ? note.result : (note.result as { id: number }).id;
    return { clientId: client.id, email: client.email, orderId, keyId, key, invoiceId: invoice.id, invoiceHash: invoice.hash, creditNoteId: noteId };
  }

  /**
   * For each client action a scope opens that names a record: its parameters naming B's record. A scope that opens an
   * action naming a record not listed here fails the sweep, so a new one is never left unswept.
   */
  const othersRecord = (r: Records): Record<string, Record<string, unknown>> => ({
    'serviceapikey/reset': { id: r.keyId },
    'serviceapikey/usage': { order_id: r.orderId },
    'serviceapikey/alerts_get': { order_id: r.orderId },
    'serviceapikey/analytics': { order_id: r.orderId, range: '30d' },
    'order/get': { id: r.orderId },
    'order/service': { id: r.orderId },
    'invoice/get': { id: r.invoiceId },
    'invoice/pdf': { id: r.invoiceId },
    'invoice/pay_with_credits': { id: r.invoiceId },
    'invoice/credit_note_get': { id: r.creditNoteId },
    'invoice/credit_note_pdf': { id: r.creditNoteId },
    // Packs belong to no client (the shop's offer): an id that is no pack is the 404 here.
    'credit/pack_buy': { id: 99_999_999 },
  });

  /** Parameters for any other action: B's ids under every common name, so a handler that trusted them would act on B. */
  const anyParams = (r: Records): Record<string, unknown> => ({
    id: r.orderId,
    order_id: r.orderId,
    client_id: r.clientId,
    key_id: r.keyId,
    invoice_id: r.invoiceId,
    hash: r.invoiceHash,
    key: r.key,
    email: 'sweep@example.com',
    name: 'Sweep',
    amount: '1.00',
    enabled: false,
  });

  /** None of B's identifying values in an answer (its key, e-mail, invoice hash). */
  function expectNothingOf(records: Records, body: unknown, action: string): void {
    const text = JSON.stringify(body);
    for (const secret of [records.key, records.email, records.invoiceHash]) expect(text, action).not.toContain(secret);
  }

  beforeAll(async () => {
    t = await createTestApp();
    a = await clientWithRecords();
    b = await clientWithRecords();
  });
  afterAll(async () => {
    await t.close();
  });

  async function sweep(browser: Browser, scopes: readonly string[]): Promise<{ allowed: string[]; refused: number }> {
    const open = new Set(scopes.flatMap((scope) => PORTAL_SCOPE_ACTIONS[scope as keyof typeof PORTAL_SCOPE_ACTIONS]));
    open.add('portal/get');
    const named = othersRecord(b);
    const allowed: string[] = [];
    let refused = 0;
    for (const { role, module, action } of listActions(modules)) {
      if (role === 'guest') continue;
      const name = `${module}/${action}`;
      const reply = await inSession(t, browser, `${role}/${name}`, named[name] ?? anyParams(b));
      const label = `${role}/${name} → ${reply.status} ${JSON.stringify(reply.body).slice(0, 200)}`;
      expect(reply.status, label).toBeLessThan(500);
      if (role === 'admin') {
        // A portal session is a client's: the admin API does not know it.
        expect(reply.status, label).toBe(401);
        refused += 1;
      } else if (!open.has(name)) {
        expect(reply.status, label).toBe(403);
        expect(reply.body.error!.message, label).toContain('portal session may not call');
        refused += 1;
      } else {
        allowed.push(name);
        if (named[name] !== undefined) expect(reply.status, label).toBe(404);
        else {
          // An action naming no record answers the session's own client only.
          expect([200, 409, 422], label).toContain(reply.status);
          expectNothingOf(b, reply.body, label);
        }
      }
    }
    return { allowed, refused };
  }

  it('a session with every scope: admin actions 401, unopened client actions 403, B’s records 404', async () => {
    const browser = await portalSession(t, a.clientId);
    const { allowed, refused } = await sweep(browser, PORTAL_SCOPES);
    expect(refused).toBeGreaterThan(150);
    // Every action a scope opens and that exists was reached (serviceapikey/analytics arrives with the key analytics).
    const existing = new Set(listActions(modules).filter(({ role }) => role === 'client').map(({ module, action }) => `${module}/${action}`));
    const opened = [...new Set(Object.values(PORTAL_SCOPE_ACTIONS).flat())].filter((name) => existing.has(name));
    expect(allowed.toSorted()).toEqual([...opened, 'portal/get'].toSorted());
    // Every opened action that takes a record is named in the table above (a required `id` or `order_id`).
    for (const { role, module, action, def } of listActions(modules)) {
      const name = `${module}/${action}`;
      if (role !== 'client' || !opened.includes(name)) continue;
      const required = (def.params as { required?: string[] }).required ?? [];
      if (required.some((param) => param === 'id' || param.endsWith('_id'))) expect(Object.keys(othersRecord(b)), name).toContain(name);
    }
  });

  for (const scope of PORTAL_SCOPES) {
    it(`a session with "${scope}" alone reaches only that scope's actions`, async () => {
      const browser = await portalSession(t, a.clientId, [scope]);
      const { allowed } = await sweep(browser, [scope]);
      expect(allowed).toContain('portal/get');
    });
  }

  it('the session still reads its own records (the sweep refuses for the right reason)', async () => {
    const browser = await portalSession(t, a.clientId);
    expect((await inSession(t, browser, 'client/order/get', { id: a.orderId })).result.id).toBe(a.orderId);
    expect((await inSession(t, browser, 'client/invoice/get', { id: a.invoiceId })).result.id).toBe(a.invoiceId);
    expect((await inSession(t, browser, 'client/invoice/credit_note_get', { id: a.creditNoteId })).status).toBe(200);
    expect((await inSession(t, browser, 'client/serviceapikey/usage', { order_id: a.orderId })).status).toBe(200);
  });
});
