// The instance secret: TOLLGATE_SECRET when set, otherwise a random one kept in `<dataDir>/secret` (created on first
// start with mode 0600, in a 0700 directory), so the embedded default needs no set-up and survives restarts.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDirectory } from '../db/file-modes.ts';

export function resolveInstanceSecret(configured: string | null, dataDir: string): string {
  if (configured !== null) return configured;
  const file = join(dataDir, 'secret');
  ensurePrivateDirectory(dataDir);
  if (existsSync(file)) {
    // A secret written by an older version, or copied in by hand, with a looser mode is tightened too.
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    return readFileSync(file, 'utf8').trim();
  }
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secret;
}
