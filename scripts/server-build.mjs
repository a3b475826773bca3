// The compiled server: src/main.ts and everything it imports, dependencies included (one file loads in a fraction
// of the time node takes to resolve and read hundreds of modules, or tsx to compile the TypeScript), into
// dist/server/main.mjs. Native and build-time packages stay outside. A stamp records the newest modification time of
// the inputs (src/, package.json, package-lock.json, this script) the file was built from, so `npm start` can tell
// it is stale.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_DIR = join(ROOT, 'dist', 'server');
export const SERVER_ENTRY = join(SERVER_DIR, 'main.mjs');
const STAMP = join(SERVER_DIR, '.build-stamp');
// Native addons, packages only the build or a stale UI needs, and packages loaded on first use (read from
// node_modules then, instead of being parsed with the bundle at every start: PDFs, PostgreSQL, SMTP). pdfkit must stay
// out in any case: it loads its fonts through its package's own `#standard-fonts/*` imports (bundled, every invoice
// PDF failed with "Cannot find module").
const EXTERNAL = ['better-sqlite3', '@node-rs/argon2', '@node-rs/bcrypt', 'pg-native', 'vite', 'esbuild', 'pdfkit', 'pg', 'nodemailer'];

function newestIn(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestIn(path) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

/** Newest modification time of what the compiled server is made of. */
export function newestInput() {
  let newest = newestIn(join(ROOT, 'src'));
  // This file too: a change to how the server is bundled (EXTERNAL) must rebuild it.
  for (const file of ['package.json', 'package-lock.json', 'scripts/server-build.mjs']) {
    const path = join(ROOT, file);
    if (existsSync(path)) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Whether dist/server/main.mjs exists and was built from the current inputs. */
export function serverIsFresh() {
  if (!existsSync(SERVER_ENTRY) || !existsSync(STAMP)) return false;
  return Number(readFileSync(STAMP, 'utf8').trim()) >= newestInput();
}

export async function buildServer() {
  const newest = newestInput();
  const { build } = await import('esbuild');
  mkdirSync(SERVER_DIR, { recursive: true });
  // Written beside the target and renamed into place: a start running at the same moment sees the old or the new file.
  const partial = join(SERVER_DIR, `main.${process.pid}.partial.mjs`);
  await build({
    entryPoints: [join(ROOT, 'src', 'main.ts')],
    outfile: partial,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    sourcemap: true,
    sourcesContent: false,
    logLevel: 'error',
    // Bundled CommonJS packages call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as __tollgateRequire } from 'node:module'; const require = __tollgateRequire(import.meta.url);" },
  });
  renameSync(`${partial}.map`, `${SERVER_ENTRY}.map`);
  renameSync(partial, SERVER_ENTRY);
  writeFileSync(STAMP, `${newest}\n`);
}
