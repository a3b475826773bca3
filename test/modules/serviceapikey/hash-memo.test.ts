// The memo of lookup hashes (src/modules/serviceapikey/check/hash-memo.ts): a warm check skips the HMAC, but only for keys
// that exist, in bounded memory, and without ever changing what a check answers (a revoked or replaced key stays
// refused although its hash is remembered).
import { describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import { KeyHashMemo } from '../../../src/modules/serviceapikey/check/hash-memo.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';

describe('KeyHashMemo', () => {
  it('knows no key until it is remembered', () => {
    const memo = new KeyHashMemo(10);
    expect(memo.get('a')).toBeUndefined();
    expect(memo.size).toBe(0);
    memo.remember('a', 'h:a');
    expect(memo.get('a')).toBe('h:a');
  });

  it('holds at most maxEntries keys, dropping the oldest remembered first', () => {
    const memo = new KeyHashMemo(3);
    for (const key of ['a', 'b', 'c', 'd']) memo.remember(key, `h:${key}`);
    expect(memo.size).toBe(3);
    expect(memo.get('a')).toBeUndefined();
    expect(['b', 'c', 'd'].map((key) => memo.get(key))).toEqual(['h:b', 'h:c', 'h:d']);
  });

  it('remembering a key twice (two checks racing) neither duplicates it nor moves it', () => {
    const memo = new KeyHashMemo(2);
    memo.remember('a', 'h:a');
    memo.remember('b', 'h:b');
    memo.remember('a', 'h:a');
    expect(memo.size).toBe(2);
    memo.remember('c', 'h:c');
    // 'a' was the oldest and stayed the oldest.
    expect(memo.get('a')).toBeUndefined();
    expect(memo.get('b')).toBe('h:b');
  });
});

async function sellKey(t: TestApp): Promise<{ key: string; order: number }> {
  const product = (await t.admin('product/prepare', { title: 'API', type: 'apikey' })).result as number;
  await t.admin('product/update', { id: product, status: 'enabled' });
  const client = await t.createClient();
  const order = (await t.admin('order/create', { client_id: client.id, product_id: product, activate: true })).result as number;
  return { key: (await t.admin('serviceapikey/get', { order_id: order })).result.api_key as string, order };
}

const check = async (t: TestApp, key: string): Promise<unknown> => (await t.call('/api/guest/serviceapikey/check', { key })).result;

describe('the check and the memo', () => {
  it('remembers a key once it was found, and no unknown key however many are tried', async () => {
    const t = await createTestApp();
    try {
      const { key } = await sellKey(t);
      const memo = t.services.apikeys.internals.hashMemo;
      // Well-formed but unknown keys (same prefix and length as real ones): they reach the hash and the cache.
      for (let i = 0; i < 30; i++) {
        const unknown = key.slice(0, -12) + randomBytes(6).toString('hex');
        expect(await check(t, unknown)).toBe(false);
      }
      expect(memo.size).toBe(0);
      expect(await check(t, key)).toBe(true);
      expect(await check(t, key)).toBe(true);
      expect(memo.size).toBe(1);
      // A warm check of a remembered key computes no HMAC at all.
      const hash = vi.spyOn(t.services.secrets, 'hash');
      expect(await check(t, key)).toBe(true);
      expect(await check(t, key)).toBe(true);
      expect(hash).not.toHaveBeenCalled();
      hash.mockRestore();
    } finally {
      await t.close();
    }
  });

  it('a remembered key switched off, then replaced, is refused at once; the new key validates', async () => {
    const t = await createTestApp();
    try {
      const { key, order } = await sellKey(t);
      expect(await check(t, key)).toBe(true);
      expect(await check(t, key)).toBe(true);
      expect(t.services.apikeys.internals.hashMemo.size).toBe(1);
      await t.admin('serviceapikey/update', { order_id: order, valid: false });
      expect(await check(t, key)).toBe(false);
      await t.admin('serviceapikey/update', { order_id: order, valid: true });
      expect(await check(t, key)).toBe(true);
      const replacement = (await t.admin('serviceapikey/reset', { order_id: order, grace_seconds: 0 })).result as string;
      expect(await check(t, key)).toBe(false);
      expect(await check(t, replacement)).toBe(true);
    } finally {
      await t.close();
    }
  });
});
