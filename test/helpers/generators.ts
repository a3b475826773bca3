// Where npm put a client generator of the test/generators workspace: its own node_modules first (beside the
// TypeScript 5 the generators drive), else the root's, where npm may hoist one that does not need TypeScript.
import { access } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

/** The path of `file` inside the installed package `pkg` (e.g. `generatorFile('orval', 'dist/bin/orval.js')`). */
export async function generatorFile(pkg: string, file: string): Promise<string> {
  for (const base of [join(ROOT, 'test/generators/node_modules'), join(ROOT, 'node_modules')]) {
    const path = join(base, pkg, file);
    if (await access(path).then(() => true, () => false)) return path;
  }
  throw new Error(`${pkg} is not installed: run npm ci`);
}
