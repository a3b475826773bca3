// Builds the browser UI (web/ → web/dist) with Vite when the output is missing or older than its sources. The
// stamp file in web/dist records the newest source mtime the output was built from.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../platform/root.ts';

/** The web/ folder: the UI's sources, its Vite config and (in dist/) its build output. */
export const WEB_ROOT = join(ROOT, 'web');
/** Where the built pages are served from. */
export const WEB_DIST_DIR = join(WEB_ROOT, 'dist');
const STAMP_FILE = '.build-stamp';
const SKIPPED = new Set(['dist', 'node_modules']);

/** Newest modification time (ms) of any file under `dir`, output folders excluded. */
export function newestSourceMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED.has(entry.name)) continue;
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestSourceMtime(path) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

function builtFrom(distDir: string): number | null {
  const stamp = join(distDir, STAMP_FILE);
  if (!existsSync(stamp) || !existsSync(join(distDir, 'index.html')) || !existsSync(join(distDir, 'admin', 'index.html'))) {
    return null;
  }
  const value = Number(readFileSync(stamp, 'utf8').trim());
  return Number.isFinite(value) ? value : null;
}

let running: Promise<void> | null = null;

/**
 * Builds web/ into web/dist unless the output is present and at least as new as every source file. Concurrent
 * calls in one process share one build.
 */
export function ensureWebBuilt(options: { root?: string; force?: boolean } = {}): Promise<void> {
  running ??= (async () => {
    const root = options.root ?? WEB_ROOT;
    const distDir = join(root, 'dist');
    if (!existsSync(join(root, 'index.html'))) {
      if (builtFrom(distDir) !== null) return;
      throw new Error(`The web UI sources are missing (${root}) and no build exists in ${distDir}`);
    }
    const newest = newestSourceMtime(root);
    const built = builtFrom(distDir);
    if (options.force !== true && built !== null && built >= newest) return;
    const { build } = await import('vite');
    await build({ root, configFile: join(root, 'vite.config.ts'), logLevel: 'warn', mode: 'production' });
    writeFileSync(join(distDir, STAMP_FILE), `${newest}\n`);
  })().finally(() => {
    running = null;
  });
  return running;
}
