// File modes of the embedded database (CONTRACT §13): the data directory 0700, the SQLite file and its WAL and
// shared-memory files 0600. They sit next to the instance secret that decrypts their tokens and keys, so no other
// local user may read them. Files made by an older version with looser modes are tightened at every start.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const DIRECTORY_MODE = 0o700;
const FILE_MODE = 0o600;

/**
 * Creates `directory` 0700, or tightens it when it already exists — unless it is not ours to tighten: a directory of
 * another user, a shared sticky one such as /tmp, or the working directory the operator started us in.
 */
export function ensurePrivateDirectory(directory: string): void {
  if (!existsSync(directory)) {
    mkdirSync(directory, { recursive: true, mode: DIRECTORY_MODE });
    chmodSync(directory, DIRECTORY_MODE); // the process umask may have loosened mkdir's mode
    return;
  }
  const stat = statSync(directory);
  const sticky = (stat.mode & 0o1000) !== 0;
  const ours = typeof process.getuid !== 'function' || stat.uid === process.getuid();
  if (!sticky && ours && resolve(directory) !== process.cwd() && (stat.mode & 0o077) !== 0) chmodSync(directory, DIRECTORY_MODE);
}

/** Sets `file` to 0600 when it exists and is looser. */
function tighten(file: string): void {
  if (existsSync(file) && (statSync(file).mode & 0o077) !== 0) chmodSync(file, FILE_MODE);
}

/**
 * Before SQLite opens `path`: the directory exists 0700 and the file exists 0600. SQLite creates the -wal and -shm
 * files with the main file's mode, so creating it 0600 here (an empty file is an empty database) covers them too.
 */
export function prepareSqliteFile(path: string): void {
  ensurePrivateDirectory(dirname(path));
  if (!existsSync(path)) closeSync(openSync(path, 'a', FILE_MODE));
  tighten(path);
}

/** After the database is open in WAL mode: its -wal and -shm files too, should they predate this version. */
export function tightenSqliteFiles(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) tighten(file);
}
