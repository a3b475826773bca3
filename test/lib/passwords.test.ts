// Password verification (src/lib/passwords.ts): argon2id as Tollgate writes it, and the PHP bcrypt hashes clients
// imported from FOSSBilling arrive with, verified once (and then replaced by the client login, test/import/).
import { hashSync } from '@node-rs/bcrypt';
import { describe, expect, it } from 'vitest';
import { hashPassword, isLegacyHash, verifyPassword } from '../../src/lib/passwords.ts';

describe('verifyPassword', () => {
  const bcrypt = hashSync('Secret-pass1', 4);
  const php = bcrypt.replace(/^\$2b\$/, '$2y$');

  it('verifies PHP password_hash() ($2y$) and the $2a$/$2b$ spellings of bcrypt', async () => {
    expect(await verifyPassword(php, 'Secret-pass1')).toBe(true);
    expect(await verifyPassword(bcrypt, 'Secret-pass1')).toBe(true);
    expect(await verifyPassword(bcrypt.replace(/^\$2b\$/, '$2a$'), 'Secret-pass1')).toBe(true);
  });

  it('refuses a wrong password against bcrypt, and a damaged bcrypt hash', async () => {
    expect(await verifyPassword(php, 'Secret-pass2')).toBe(false);
    expect(await verifyPassword(php, '')).toBe(false);
    expect(await verifyPassword(`${php.slice(0, -1)}!`, 'Secret-pass1')).toBe(false);
    expect(await verifyPassword(php.slice(0, 40), 'Secret-pass1')).toBe(false);
  });

  it('still verifies argon2id, and an unknown account never verifies', async () => {
    const argon = await hashPassword('Secret-pass1');
    expect(await verifyPassword(argon, 'Secret-pass1')).toBe(true);
    expect(await verifyPassword(argon, 'Secret-pass2')).toBe(false);
    expect(await verifyPassword(null, 'Secret-pass1')).toBe(false);
  });

  it('isLegacyHash tells an imported bcrypt hash from Tollgate\'s argon2id', async () => {
    expect(isLegacyHash(php)).toBe(true);
    expect(isLegacyHash(bcrypt)).toBe(true);
    expect(isLegacyHash(await hashPassword('Secret-pass1'))).toBe(false);
    expect(isLegacyHash(null)).toBe(false);
    expect(isLegacyHash('$2y$04$short')).toBe(false);
  });
});
