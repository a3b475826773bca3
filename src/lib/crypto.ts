// Secrets: keyed hashes for lookup, AES-256-GCM for what an owner must be able to read again, CSPRNG tokens and
// constant-time comparison. Pure functions over an instance secret; no I/O.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

export const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export interface SecretBox {
  /** Hex HMAC-SHA256 of a value under the instance's lookup key: the same input always gives the same output. */
  hash(value: string): string;
  /** AES-256-GCM with a random IV; the result is `v1.<iv>.<tag>.<ciphertext>` in base64url. */
  encrypt(plain: string): string;
  decrypt(sealed: string): string;
}

export function createSecretBox(instanceSecret: string): SecretBox {
  if (instanceSecret.length < 16) throw new Error('The instance secret must be at least 16 characters');
  // Two independent keys from one secret, so a leaked lookup hash says nothing about the encryption key.
  const hashKey = Buffer.from(hkdfSync('sha256', instanceSecret, 'tollgate', 'lookup-hash', 32));
  const encKey = Buffer.from(hkdfSync('sha256', instanceSecret, 'tollgate', 'aes-256-gcm', 32));

  return {
    hash(value) {
      return createHmac('sha256', hashKey).update(value).digest('hex');
    },
    encrypt(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', encKey, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
    },
    decrypt(sealed) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== 'v1' || iv === undefined || tag === undefined || body === undefined) {
        throw new Error('Unreadable sealed value');
      }
      const decipher = createDecipheriv('aes-256-gcm', encKey, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

/** `length` characters drawn uniformly from `alphabet` with a CSPRNG (randomInt rejects biased draws). */
export function randomString(length: number, alphabet: string = ALPHANUMERIC): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** A 32-character API token of [A-Za-z0-9], as the contract specifies. */
export function newApiToken(): string {
  return randomString(32);
}

/** Opaque session ids and CSRF tokens: 256 bits, URL-safe. */
export function newOpaqueToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Compares two strings in time that depends only on their lengths. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  if (left.length !== right.length) {
    // Still spend a comparison so a length mismatch is not much faster than a content mismatch.
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}
