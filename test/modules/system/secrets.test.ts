// Issue 21 item 2: secrets in settings cannot silently break payments. Stripe keys and the webhook secret are checked
// for shape when stored (422 naming the field, nothing saved); settings_get says for each secret whose value is in
// force (stored, environment, none); clearing a stored value puts the environment's back; a change takes effect
// without a restart; every failure at Stripe is logged once with Stripe's message and request id and never a key;
// the 502's sentence is shown once. Runs on SQLite and, with TEST_DATABASE_URL, PostgreSQL + Redis.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { redactSecrets } from '../../../src/modules/payment/gateway-failures.ts';
import { serverErrorText } from '../../../src/lib/server-error-text.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { SECRET_KEY, StripeStandIn, WEBHOOK_SECRET } from '../../helpers/stripe-server.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';
import { deliver, payment, purchase, type StripeStand } from '../../helpers/stripe-fixtures.ts';

// Shapes Stripe gives its keys (letters and digits after the prefix); the stand-in is told to accept these.
const STORED_KEY = 'sk_test_51StoredKeyFromSettings00';
const OTHER_KEY = 'rk_live_51AnotherRestrictedKey000';
const STORED_WHSEC = 'whsec_StoredSigningSecret0123456789';

let stripe: StripeStandIn;
let t: TestApp;
let plan: number;

beforeAll(async () => {
  stripe = new StripeStandIn();
  await stripe.start();
  stripe.acceptedKeys.add(STORED_KEY);
  stripe.acceptedKeys.add(OTHER_KEY);
  // Only the connection comes from the environment: no keys, so no card payments until Settings has them.
  t = await createTestApp({ STRIPE_API_BASE: stripe.url, STRIPE_TIMEOUT_MS: '400', PUBLIC_URL: 'https://billing.example.com', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET });
  plan = await makeProduct(t, { title: 'Pro plan' });
});

afterAll(async () => {
  await t.close();
  await stripe.stop();
});

afterEach(() => {
  vi.restoreAllMocks();
});

const settings = async (): Promise<Record<string, unknown>> => (await t.admin('system/settings_get')).result as Record<string, unknown>;
const gatewayCodes = async (): Promise<string[]> => ((await t.call('/api/guest/invoice/gateways', {})).result as Array<{ code: string }>).map((gateway) => gateway.code);

/** Everything written to stderr while `work` runs. */
async function stderrOf(work: () => Promise<void>): Promise<string> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return lines.join('');
}

describe('the shape of a stored secret', () => {
  it('refuses a placeholder, a publishable key or a webhook secret in the key field with 422 naming the field, and saves nothing of the call', async () => {
    for (const value of ['sk_live_…', 'sk_live_', 'pk_test_51abcdefghijklmnopqrstu', 'whsec_abcdefghijklmnop1234', 'sk_test_short', 'sk_prod_51abcdefghijklmnopqrstu', 'sk_test_51abc def ghijklmnopqr']) {
      expectInvalid(await t.admin('system/settings_update', { company_name: 'Should Not Stick', stripe_secret_key: value }), 'stripe_secret_key');
    }
    expect((await settings()).company_name).not.toBe('Should Not Stick');
    for (const value of ['whsec_…', 'sk_test_51abcdefghijklmnopqrstu', 'whsec_short']) {
      expectInvalid(await t.admin('system/settings_update', { stripe_webhook_secret: value }), 'stripe_webhook_secret');
    }
    expectInvalid(await t.admin('system/settings_update', { stripe_secret_key: 12345 }), 'stripe_secret_key');
    expectInvalid(await t.admin('system/settings_update', { smtp_url: 'http://mail.example.com' }), 'smtp_url');
    expect((await settings()).stripe_secret_key_set).toBe(false);
    expect(await t.services.db.selectFrom('settings').select('name').where('name', '=', 'stripe_secret_key').executeTakeFirst()).toBeUndefined();
  });

  it('only staff with system.manage may store a secret (401 without credentials, 403 without the permission)', async () => {
    expectError(await t.call('/api/admin/system/settings_update', { stripe_secret_key: STORED_KEY }), 201, 401);
    const viewer = await staffWith(t, ['invoice.view']);
    expectError(await asStaff(t, viewer, 'system/settings_update', { stripe_secret_key: STORED_KEY }), 403);
    const client = await t.createClient();
    expect((await asClient(t, client.token, 'system/settings_update', { stripe_secret_key: STORED_KEY })).status).toBe(404);
    expect((await settings()).stripe_secret_key_source).toBeNull();
  });
});

describe('which value is in force, and clearing a stored one', () => {
  it('says environment, stored or none for each secret, never the value; clearing the stored value brings the environment back', async () => {
    const before = await settings();
    expect(before).toMatchObject({
      stripe_secret_key_set: false,
      stripe_secret_key_source: null,
      stripe_webhook_secret_set: true,
      stripe_webhook_secret_source: 'environment',
      smtp_url_source: null,
    });
    expect((await t.admin('system/settings_update', { stripe_webhook_secret: STORED_WHSEC })).body.error).toBeNull();
    const stored = await t.admin('system/settings_get');
    expect(stored.result.stripe_webhook_secret_source).toBe('stored');
    expect(JSON.stringify(stored.body)).not.toContain(STORED_WHSEC);
    expect(await t.services.settings.secret('stripe_webhook_secret')).toBe(STORED_WHSEC);

    // "" drops the stored value: the environment's is in force again.
    expect((await t.admin('system/settings_update', { stripe_webhook_secret: '' })).body.error).toBeNull();
    expect((await settings()).stripe_webhook_secret_source).toBe('environment');
    expect(await t.services.settings.secret('stripe_webhook_secret')).toBe(WEBHOOK_SECRET);
    expect(t.services.settings.peekSecret('stripe_webhook_secret')).toBe(WEBHOOK_SECRET);
    // Clearing what is not stored is harmless.
    expect((await t.admin('system/settings_update', { stripe_secret_key: '' })).body.error).toBeNull();
    expect((await settings()).stripe_secret_key_source).toBeNull();
  });
});

describe('a change takes effect without a restart', () => {
  it('Stripe appears once both keys are set, uses a replaced key at the next payment, and disappears when cleared', async () => {
    expect(await gatewayCodes()).toEqual(['custom']);
    const bought = await purchase(t, plan);
    expectInvalid(await payment(t, { hash: bought.hash, gateway_id: 'stripe' }), 'gateway_id');

    expect((await t.admin('system/settings_update', { stripe_secret_key: STORED_KEY })).body.error).toBeNull();
    expect(await gatewayCodes()).toEqual(['custom', 'stripe']);
    const first = await payment(t, { hash: bought.hash, gateway_id: 'stripe' });
    expect(first.body.error).toBeNull();
    expect(stripe.requestsTo('POST', '/v1/checkout/sessions').at(-1)!.authorization).toBe(`Bearer ${STORED_KEY}`);

    expect((await t.admin('system/settings_update', { stripe_secret_key: OTHER_KEY })).body.error).toBeNull();
    expect((await payment(t, { hash: bought.hash, gateway_id: 'stripe' })).body.error).toBeNull();
    expect(stripe.requestsTo('POST', '/v1/checkout/sessions').at(-1)!.authorization).toBe(`Bearer ${OTHER_KEY}`);

    // The webhook secret in force verifies events: a stored one replaces the environment's at once.
    expect((await t.admin('system/settings_update', { stripe_webhook_secret: STORED_WHSEC })).body.error).toBeNull();
    const event = stripe.event('customer.created', { id: 'cus_x', object: 'customer' });
    const stand = { t, stripe } as unknown as StripeStand;
    expect((await deliver(stand, stripe.sign(event))).status).toBe(400);
    expect((await deliver(stand, stripe.sign(event, { secret: STORED_WHSEC }))).status).toBe(200);
    expect((await t.admin('system/settings_update', { stripe_webhook_secret: '' })).body.error).toBeNull();

    expect((await t.admin('system/settings_update', { stripe_secret_key: '' })).body.error).toBeNull();
    expect(await gatewayCodes()).toEqual(['custom']);
    expectInvalid(await payment(t, { hash: bought.hash, gateway_id: 'stripe' }), 'gateway_id');
    const webhook = await t.app.inject({ method: 'POST', url: '/webhooks/stripe', payload: '{}', headers: { 'content-type': 'application/json' } });
    expect(webhook.statusCode).toBe(404);
  });

  it('another process sees a stored key within the settings cache lifetime (peekSecret refreshes its copy)', async () => {
    // Written behind this process's back, as another process would: the copy here is refreshed within CACHE_TTL_MS.
    await t.services.db
      .insertInto('settings')
      .values({ name: 'stripe_secret_key', value: t.services.secrets.encrypt(STORED_KEY), updated_at: new Date().toISOString() })
      .execute();
    const deadline = Date.now() + 8000;
    while (t.services.settings.peekSecret('stripe_secret_key') !== STORED_KEY && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(t.services.settings.peekSecret('stripe_secret_key')).toBe(STORED_KEY);
    expect(await gatewayCodes()).toEqual(['custom', 'stripe']);
    expect((await t.admin('system/settings_update', { stripe_secret_key: '' })).body.error).toBeNull();
  });
});

describe('provider failures', () => {
  it('a key Stripe refuses: 502 with one sentence, one log line with Stripe\'s message and request id, never the key', async () => {
    // Well-formed but unknown to Stripe (revoked, or another account's): the shape check cannot catch it.
    const revoked = 'sk_live_51RevokedKeyNobodyKnows99';
    expect((await t.admin('system/settings_update', { stripe_secret_key: revoked })).body.error).toBeNull();
    const bought = await purchase(t, plan);
    let reply: Awaited<ReturnType<typeof payment>> | undefined;
    const log = await stderrOf(async () => {
      reply = await payment(t, { hash: bought.hash, gateway_id: 'stripe' });
    });
    expectError(reply!, 502);
    expect(reply!.body.error!.message).toBe('Stripe refused the request: the Stripe keys of this installation are not valid');
    const lines = log.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 50,
      gateway: 'stripe',
      action: 'create a customer',
      provider_message: 'Invalid API Key provided: [redacted]',
      request_id: expect.stringMatching(/^req_/),
      provider_status: 401,
    });
    expect(log).not.toContain(revoked);
    expect(log).not.toContain(revoked.slice(-4));
    expect(log).not.toContain(WEBHOOK_SECRET);
    expect((await t.admin('system/settings_update', { stripe_secret_key: '' })).body.error).toBeNull();
  });

  it('Stripe unreachable: 502 and a log line naming the failure, no key', async () => {
    stripe.acceptedKeys.add(SECRET_KEY);
    expect((await t.admin('system/settings_update', { stripe_secret_key: STORED_KEY })).body.error).toBeNull();
    const bought = await purchase(t, plan);
    await stripe.stop();
    let reply: Awaited<ReturnType<typeof payment>> | undefined;
    try {
      const log = await stderrOf(async () => {
        reply = await payment(t, { hash: bought.hash, gateway_id: 'stripe' });
      });
      expectError(reply!, 502);
      expect(reply!.body.error!.message).toBe('Stripe could not be reached (network error or timeout)');
      expect(log).toContain('"gateway":"stripe"');
      expect(log).toContain('"provider_message"');
      expect(log).not.toContain(STORED_KEY);
    } finally {
      await stripe.start();
    }
    expect((await t.admin('system/settings_update', { stripe_secret_key: '' })).body.error).toBeNull();
  });

  it('redacts anything that looks like a credential from a provider message', () => {
    expect(redactSecrets('Invalid API Key provided: sk_live_****1234')).toBe('Invalid API Key provided: [redacted]');
    expect(redactSecrets('bad rk_test_abc and whsec_xyz= and pk_live_Q')).toBe('bad [redacted] and [redacted] and [redacted]');
    expect(redactSecrets('No such customer: cus_123')).toBe('No such customer: cus_123');
  });

  it('the web UI shows a 502 sentence once, without repeating "try again"', () => {
    const text = serverErrorText('Card (Stripe) could not be reached; nothing was charged. Try again in a moment.', 502);
    expect(text).toBe('Card (Stripe) could not be reached; nothing was charged. Try again in a moment (error 502).');
    expect(text.match(/try again/gi)).toHaveLength(1);
    expect(serverErrorText('Internal error', 500)).toBe('Something went wrong on the server: Internal error (error 500). Try again in a moment.');
    expect(serverErrorText('Busy, try again later', 503).match(/again/gi)).toHaveLength(1);
  });
});
