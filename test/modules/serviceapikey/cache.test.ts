// The key cache (src/modules/serviceapikey/check/cache.ts) on its own: it decides whether a revoked key is refused, so each
// rule has a test that fails when the rule is broken (issue 8, items 13–15). The cache takes the time as an argument
// (`now`, epoch ms), so the clock here is a plain number, and interleavings of readers and writers are spelled out
// step by step: "a read starts" is taking `cache.epoch`, "the read ends" is `fill(…, epoch, now)`.
import { describe, expect, it } from 'vitest';
import { FLUX_MAX_MS, KeyCache, UNTRUSTED_MAX_AGE_MS, type KeyEntry } from '../../../src/modules/serviceapikey/check/cache.ts';
import { bucketOf, calendarMonth } from '../../../src/modules/serviceapikey/usage/usage-period.ts';
import { createTestApp } from '../../helpers/app.ts';

const T0 = 1_000_000;

function record(id: number, loadedAt = T0, enabled = true): KeyEntry {
  return {
    id,
    orderId: id,
    clientId: 1,
    enabled,
    clientActive: true,
    orderStatus: 'active',
    trialEnded: false,
    expiresAtMs: null,
    config: {},
    limit: null,
    enforceLimit: false,
    plan: { period: 'calendar_month', included: null, overage: null, hardLimit: null },
    orderPeriod: null,
    usage: { keyIds: [id], period: calendarMonth(T0), bucket: bucketOf(calendarMonth(T0)), used: 0, usedAt: loadedAt, refreshing: false, meters: null, credit: null },
    rateLimit: null,
    rotatingUntilMs: null,
    loadedAt,
    tick: 0,
  };
}

const hash = (n: number | string): string => `h${n}`;

/** Fills `key` as a read that started now would, and returns what the cache then answers. */
function fillNow(cache: KeyCache, key: string, entry: KeyEntry | null, now = T0): KeyEntry | null | undefined {
  cache.fill(key, entry, cache.epoch, now);
  return cache.get(key, now);
}

describe('KeyCache: reads racing revocations (the epoch and the change window)', () => {
  it('does not store a read that started before an invalidation of that key (a revoked key stays revoked)', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    const started = cache.epoch; // the read of the still-valid record begins…
    cache.invalidate(hash(1)); // …the key is revoked and the revocation published…
    cache.fill(hash(1), record(1), started, T0); // …and the stale read ends.
    expect(cache.get(hash(1), T0)).toBeUndefined();
    expect(cache.size).toBe(0);
    // A read that starts after the revocation is stored.
    expect(fillNow(cache, hash(1), record(1, T0, false))).toMatchObject({ enabled: false });
  });

  it('does not store a read that started before any invalidation, nor before clear()', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    const started = cache.epoch;
    cache.invalidate(hash('other'));
    cache.fill(hash(1), record(1), started, T0);
    cache.fill(hash(2), null, started, T0);
    expect(cache.get(hash(1), T0)).toBeUndefined();
    expect(cache.get(hash(2), T0)).toBeUndefined();

    const beforeClear = cache.epoch;
    cache.clear();
    cache.fill(hash(1), record(1), beforeClear, T0);
    expect(cache.get(hash(1), T0)).toBeUndefined();
  });

  it('never serves the old record while a change is uncommitted, and stores nothing read during it', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    expect(fillNow(cache, hash(1), record(1))).toMatchObject({ id: 1 });
    expect(fillNow(cache, hash(2), record(2))).toMatchObject({ id: 2 });
    cache.beginChange(hash(1), T0);
    // The old record is gone at once (not merely hidden) and lookups go to the database…
    expect(cache.size).toBe(1);
    expect(cache.get(hash(1), T0 + 1)).toBeUndefined();
    // …whose answer, read while the change is uncommitted, is not kept: it may be the state about to be replaced.
    cache.fill(hash(1), record(1), cache.epoch, T0 + 2);
    cache.fill(hash(1), null, cache.epoch, T0 + 2);
    expect(cache.get(hash(1), T0 + 3)).toBeUndefined();
    // Other keys are untouched.
    expect(cache.get(hash(2), T0 + 3)).toMatchObject({ id: 2 });

    const duringChange = cache.epoch;
    cache.endChange(hash(1));
    // A read that began before the commit may have seen the old row: not stored either.
    cache.fill(hash(1), record(1), duringChange, T0 + 4);
    expect(cache.get(hash(1), T0 + 4)).toBeUndefined();
    // After the commit, reads are cached again.
    expect(fillNow(cache, hash(1), record(1, T0, false), T0 + 5)).toMatchObject({ enabled: false });
  });

  it('stores nothing at all while a change is in progress (not merely hides it)', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    fillNow(cache, hash(2), record(2));
    cache.beginChange(hash(1), T0);
    cache.fill(hash(1), record(1), cache.epoch, T0 + 1);
    expect(cache.size).toBe(1);
    cache.endChange(hash(1));
    cache.fill(hash(1), record(1), cache.epoch, T0 + 2);
    expect(cache.size).toBe(2);
  });

  it('never lets the epoch come back to a value a pending read started at, whatever the mix of invalidations', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    const first = cache.epoch;
    cache.clear();
    cache.invalidate(hash('x'));
    cache.fill(hash(1), record(1), first, T0);
    expect(cache.get(hash(1), T0)).toBeUndefined();
    const second = cache.epoch;
    cache.invalidate(hash('x'));
    cache.clear();
    cache.fill(hash(1), record(1), second, T0);
    expect(cache.get(hash(1), T0)).toBeUndefined();
    const third = cache.epoch;
    cache.beginChange(hash('y'), T0);
    cache.endChange(hash('y'));
    cache.clear();
    cache.fill(hash(1), record(1), third, T0);
    expect(cache.size).toBe(0);
  });

  it('keeps the change window open until the last of several writers has ended', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.beginChange(hash(1), T0); // writer A
    cache.beginChange(hash(1), T0 + 1); // writer B
    cache.endChange(hash(1)); // A commits; B is still inside
    expect(fillNow(cache, hash(1), record(1), T0 + 2)).toBeUndefined();
    expect(fillNow(cache, hash(1), null, T0 + 2)).toBeUndefined();
    cache.endChange(hash(1)); // B commits
    expect(fillNow(cache, hash(1), record(1), T0 + 3)).toMatchObject({ id: 1 });
    // An end without a beginning (a writer on another path) only invalidates.
    cache.endChange(hash(1));
    expect(cache.get(hash(1), T0 + 4)).toBeUndefined();
    expect(fillNow(cache, hash(1), record(1), T0 + 4)).toMatchObject({ id: 1 });
  });

  it('forgets a change whose end never came (a crashed writer) after FLUX_MAX_MS, counted from the last beginning', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.beginChange(hash(1), T0);
    cache.beginChange(hash(1), T0 + 10_000); // a second writer extends the window
    expect(fillNow(cache, hash(1), record(1), T0 + FLUX_MAX_MS + 5_000)).toBeUndefined();
    expect(fillNow(cache, hash(1), record(1), T0 + 10_000 + FLUX_MAX_MS - 1)).toBeUndefined();
    expect(fillNow(cache, hash(1), record(1), T0 + 10_000 + FLUX_MAX_MS)).toMatchObject({ id: 1 });
    // A key that is read while marked also sees the mark expire.
    cache.beginChange(hash(2), T0);
    expect(cache.get(hash(2), T0 + FLUX_MAX_MS - 1)).toBeUndefined();
    expect(fillNow(cache, hash(2), record(2), T0 + FLUX_MAX_MS)).toMatchObject({ id: 2 });
  });

  it("does not let a crashed writer's expired mark keep a later writer's change open", () => {
    for (const touch of [false, true]) {
      const cache = new KeyCache({ maxEntries: 10 });
      cache.beginChange(hash(1), T0); // never ends
      const later = T0 + FLUX_MAX_MS + 1;
      // With or without a lookup in between that notices the expiry.
      if (touch) expect(cache.get(hash(1), later)).toBeUndefined();
      cache.beginChange(hash(1), later);
      cache.endChange(hash(1));
      expect(fillNow(cache, hash(1), record(1), later + 1)).toMatchObject({ id: 1 });
    }
  });

  it('treats a mark as expired from exactly FLUX_MAX_MS after its last beginning', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.beginChange(hash(1), T0); // a crashed writer
    cache.beginChange(hash(1), T0 + FLUX_MAX_MS); // a new writer, just as the old mark expires
    cache.endChange(hash(1));
    expect(fillNow(cache, hash(1), record(1), T0 + FLUX_MAX_MS + 1)).toMatchObject({ id: 1 });
  });

  it('defaults beginChange to the current time', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.beginChange(hash(1));
    expect(fillNow(cache, hash(1), record(1), Date.now())).toBeUndefined();
    expect(fillNow(cache, hash(1), record(1), Date.now() + FLUX_MAX_MS + 1000)).toMatchObject({ id: 1 });
  });
});

describe('KeyCache: bounds and LRU order (KEY_CACHE_SIZE)', () => {
  it('holds exactly maxEntries records, evicting the least recently filled', () => {
    const cache = new KeyCache({ maxEntries: 3 });
    for (let i = 1; i <= 3; i++) fillNow(cache, hash(i), record(i));
    expect(cache.size).toBe(3);
    for (let i = 1; i <= 3; i++) expect(cache.get(hash(i), T0)).toBeDefined();
    fillNow(cache, hash(4), record(4));
    expect(cache.size).toBe(3);
    for (let i = 5; i <= 50; i++) fillNow(cache, hash(i), record(i));
    expect(cache.size).toBe(3);
    expect([48, 49, 50].map((i) => cache.get(hash(i), T0)?.id)).toEqual([48, 49, 50]);
    expect(cache.get(hash(47), T0)).toBeUndefined();
  });

  it('keeps at least one record whatever the size asked', () => {
    for (const maxEntries of [0, -5]) {
      const cache = new KeyCache({ maxEntries });
      fillNow(cache, hash(1), record(1));
      fillNow(cache, hash(2), record(2));
      expect(cache.size).toBe(1);
      expect(cache.get(hash(2), T0)).toMatchObject({ id: 2 });
    }
  });

  it('evicts the least recently used: a read record outlives one filled after it', () => {
    const cache = new KeyCache({ maxEntries: 4 });
    for (const i of [1, 2, 3, 4]) fillNow(cache, hash(i), record(i));
    expect(cache.get(hash(1), T0)).toMatchObject({ id: 1 }); // 1 is now the most recently used
    fillNow(cache, hash(5), record(5)); // evicts 2, the least recently used
    expect(cache.get(hash(2), T0)).toBeUndefined();
    expect(cache.get(hash(1), T0)).toMatchObject({ id: 1 });
    fillNow(cache, hash(6), record(6)); // evicts 3
    expect(cache.get(hash(3), T0)).toBeUndefined();
    for (const i of [1, 4, 5, 6]) expect(cache.get(hash(i), T0)).toMatchObject({ id: i });
  });

  it('moves a re-filled record to the young end', () => {
    const cache = new KeyCache({ maxEntries: 2 });
    fillNow(cache, hash(1), record(1));
    fillNow(cache, hash(2), record(2));
    cache.fill(hash(1), record(11), cache.epoch, T0); // a fresher read of key 1
    cache.fill(hash(3), record(3), cache.epoch, T0); // evicts 2, not 1
    expect(cache.get(hash(2), T0)).toBeUndefined();
    expect(cache.get(hash(1), T0)).toMatchObject({ id: 11 });
    expect(cache.size).toBe(2);
  });

  it('promotes lazily: only a record read after more than a quarter of the cache has been touched since its last promotion', () => {
    // maxEntries 8 → a record moves to the young end when more than 2 touches happened since its last one.
    const cache = new KeyCache({ maxEntries: 8 });
    const a = record(1);
    cache.fill(hash(1), a, cache.epoch, T0); // touch 1
    expect(a.tick).toBe(1);
    cache.fill(hash(2), record(2), cache.epoch, T0); // touch 2
    expect(cache.get(hash(1), T0)).toBe(a); // touch 3: 3 - 1 = 2, not more than 2: stays
    expect(a.tick).toBe(1);
    expect(cache.get(hash(1), T0)).toBe(a); // touch 4: 4 - 1 > 2, promoted
    expect(a.tick).toBe(4);
    cache.fill(hash(3), record(3), cache.epoch, T0); // touch 5
    expect(cache.get(hash(1), T0)).toBe(a); // touch 6: 6 - 4 = 2: stays
    expect(a.tick).toBe(4);
    // Order now (old → young): 2, 1, 3. Filling 6 more keys evicts 2 first, then 1.
    for (let i = 10; i < 16; i++) cache.fill(hash(i), record(i), cache.epoch, T0);
    expect(cache.get(hash(2), T0)).toBeUndefined();
    expect(cache.get(hash(1), T0)).toBe(a);
    cache.fill(hash(16), record(16), cache.epoch, T0);
    expect(cache.get(hash(1), T0)).toBe(a); // promoted by the read just above, so 3 went instead
    expect(cache.get(hash(3), T0)).toBeUndefined();
  });

  it('with a large cache, a record read again soon is not moved (the hot path pays a lookup only)', () => {
    const cache = new KeyCache({ maxEntries: 40 }); // promote after more than 10 touches
    const first = record(1);
    cache.fill(hash(1), first, cache.epoch, T0);
    for (let i = 2; i <= 10; i++) fillNow(cache, hash(i), record(i)); // 18 touches later…
    for (let i = 0; i < 3; i++) cache.get(hash(1), T0);
    expect(first.tick).toBe(20); // …the first read promoted it; the next two did not move it
  });

  it('bounds the unknown keys it remembers (maxNegative), dropping the oldest', () => {
    const cache = new KeyCache({ maxEntries: 10, maxNegative: 3 });
    for (let i = 1; i <= 4; i++) fillNow(cache, hash(`u${i}`), null);
    expect(cache.get(hash('u1'), T0)).toBeUndefined();
    for (let i = 2; i <= 4; i++) expect(cache.get(hash(`u${i}`), T0)).toBeNull();
    // Unknown keys do not count against the records' bound, nor records against theirs.
    for (let i = 1; i <= 10; i++) fillNow(cache, hash(i), record(i));
    expect(cache.size).toBe(10);
    for (let i = 2; i <= 4; i++) expect(cache.get(hash(`u${i}`), T0)).toBeNull();
  });

  it('bounds the unknown keys at 10,000 by default', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    for (let i = 0; i <= 10_000; i++) cache.fill(hash(`u${i}`), null, cache.epoch, T0);
    expect(cache.get(hash('u0'), T0)).toBeUndefined();
    expect(cache.get(hash('u1'), T0)).toBeNull();
    expect(cache.get(hash('u10000'), T0)).toBeNull();
  });

  it('uses KEY_CACHE_SIZE for the service cache', async () => {
    const t = await createTestApp({ KEY_CACHE_SIZE: '2' });
    try {
      const product = (await t.admin('product/prepare', { title: 'API', type: 'apikey' })).result as number;
      await t.admin('product/update', { id: product, status: 'enabled' });
      const client = await t.createClient();
      const keys: string[] = [];
      for (let i = 0; i < 3; i++) {
        const order = (await t.admin('order/create', { client_id: client.id, product_id: product, activate: true })).result as number;
        keys.push((await t.admin('serviceapikey/get', { order_id: order })).result.api_key as string);
      }
      const cache = t.services.apikeys.internals.cache;
      // The first check starts the invalidation listener (PostgreSQL or Redis), which empties the cache once it is
      // up: wait for that before filling.
      expect((await t.call('/api/guest/serviceapikey/check', { key: keys[0] })).result).toBe(true);
      for (let waited = 0; !cache.trusted && waited < 5000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(cache.trusted).toBe(true);
      for (const key of keys) expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
      expect(cache.size).toBe(2);
      expect(cache.get(t.services.secrets.hash(keys[0]!), Date.now())).toBeUndefined();
    } finally {
      await t.close();
    }
  });
});

describe('KeyCache: unknown keys expire', () => {
  it('remembers an unknown key for 3 s by default, then asks the database again', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.fill(hash('u'), null, cache.epoch, T0);
    expect(cache.get(hash('u'), T0 + 2_999)).toBeNull();
    expect(cache.get(hash('u'), T0 + 3_000)).toBeUndefined();
    // A key created meanwhile (on another process) is then found and cached.
    expect(fillNow(cache, hash('u'), record(1), T0 + 3_001)).toMatchObject({ id: 1 });
  });

  it('honours negativeTtlMs', () => {
    const cache = new KeyCache({ maxEntries: 10, negativeTtlMs: 500 });
    cache.fill(hash('u'), null, cache.epoch, T0);
    expect(cache.get(hash('u'), T0 + 499)).toBeNull();
    expect(cache.get(hash('u'), T0 + 500)).toBeUndefined();
  });

  it('forgets an unknown key when it is invalidated (a key just created here or elsewhere)', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    fillNow(cache, hash('u'), null);
    cache.invalidate(hash('u'));
    expect(cache.get(hash('u'), T0)).toBeUndefined();
    fillNow(cache, hash('v'), null);
    fillNow(cache, hash(1), record(1));
    cache.clear();
    expect(cache.get(hash('v'), T0)).toBeUndefined();
    expect(cache.get(hash(1), T0)).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});

describe('KeyCache: while no invalidation channel listens (trusted = false)', () => {
  it('is trusted by default', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    expect(cache.trusted).toBe(true);
    cache.fill(hash(1), record(1, T0), cache.epoch, T0);
    expect(cache.get(hash(1), T0 + 3_600_000)).toMatchObject({ id: 1 });
  });

  it(`keeps records at most ${UNTRUSTED_MAX_AGE_MS} ms after they were read, and drops them after`, () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.trusted = false;
    cache.fill(hash(1), record(1, T0), cache.epoch, T0);
    expect(cache.get(hash(1), T0 + UNTRUSTED_MAX_AGE_MS)).toMatchObject({ id: 1 });
    expect(cache.get(hash(1), T0 + UNTRUSTED_MAX_AGE_MS + 1)).toBeUndefined();
    expect(cache.size).toBe(0);
    // Even once the channel is back, the dropped record is not served again.
    cache.trusted = true;
    expect(cache.get(hash(1), T0 + UNTRUSTED_MAX_AGE_MS + 2)).toBeUndefined();
  });

  it('ages a record from when it was read, not from when it was stored', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.trusted = false;
    cache.fill(hash(1), record(1, T0 - 900), cache.epoch, T0);
    expect(cache.get(hash(1), T0 + 100)).toMatchObject({ id: 1 });
    expect(cache.get(hash(1), T0 + 101)).toBeUndefined();
  });

  it(`remembers unknown keys at most ${UNTRUSTED_MAX_AGE_MS} ms too`, () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.trusted = false;
    cache.fill(hash('u'), null, cache.epoch, T0);
    expect(cache.get(hash('u'), T0 + UNTRUSTED_MAX_AGE_MS - 1)).toBeNull();
    expect(cache.get(hash('u'), T0 + UNTRUSTED_MAX_AGE_MS)).toBeUndefined();
    // Dropped, not just hidden: trusting the channel again does not bring it back within its 3 s.
    cache.trusted = true;
    expect(cache.get(hash('u'), T0 + UNTRUSTED_MAX_AGE_MS + 1)).toBeUndefined();
  });

  it('serves trusted unknown keys for their whole TTL once the channel is back', () => {
    const cache = new KeyCache({ maxEntries: 10 });
    cache.trusted = false;
    cache.fill(hash('u'), null, cache.epoch, T0);
    cache.trusted = true;
    expect(cache.get(hash('u'), T0 + 2_000)).toBeNull();
  });
});
