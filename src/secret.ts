// The instance secret: TOLLGATE_SECRET when set, otherwise a random one kept in `<dataDir>/secret` (created on first
// start with mode 0600), so the embedded default needs no set-up and survives restarts.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function resolveInstanceSecret(configured: string | null, dataDir: string): string {
  if (configured !== null) return configured;
  const file = join(dataDir, 'secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secret;
}
