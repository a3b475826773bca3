// argon2id password hashing. Verification of an unknown account runs against a fixed dummy hash so that "no such
// e-mail" and "wrong password" take the same time.
//
// Clients imported from FOSSBilling arrive with PHP password_hash() bcrypt hashes (`$2y$…`): those verify once with
// bcrypt (the library compares in constant time) and the caller then replaces them with argon2id (isLegacyHash).
import { hash, verify } from '@node-rs/argon2';

/** PHP's `$2y$`, and the `$2a$`/`$2b$` spellings of the same bcrypt. */
const BCRYPT = /^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/;

// Algorithm.Argon2id is a const enum in the typings; the numeric value keeps isolatedModules happy.
const ARGON2ID = 2;
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

let dummyHash: Promise<string> | null = null;

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

export async function verifyPassword(storedHash: string | null, password: string): Promise<boolean> {
  if (storedHash === null) {
    dummyHash ??= hash('tollgate-dummy-password', OPTIONS);
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  if (BCRYPT.test(storedHash)) {
    // Loaded on first use: only instances that imported FOSSBilling clients ever meet such a hash.
    const bcrypt = await import('@node-rs/bcrypt');
    return bcrypt.verify(password, storedHash).catch(() => false);
  }
  return verify(storedHash, password).catch(() => false);
}

/** True for a hash Tollgate did not make (an imported bcrypt one): rehash it with argon2id once the password is known. */
export function isLegacyHash(storedHash: string | null): boolean {
  return storedHash !== null && BCRYPT.test(storedHash);
}

/** Contract: 8–256 characters with at least one digit, one lower-case and one upper-case letter. */
export function passwordProblem(password: string): string | null {
  if (password.length < 8 || password.length > 256) return 'must be 8 to 256 characters long';
  if (!/[0-9]/.test(password)) return 'must contain a digit';
  if (!/[a-z]/.test(password)) return 'must contain a lower-case letter';
  if (!/[A-Z]/.test(password)) return 'must contain an upper-case letter';
  return null;
}
