// Builds the SDK for npm (`npm pack` runs it as prepack): JavaScript with esbuild, ESM (dist/*.js) and CommonJS
// (dist/*.cjs), one self-contained file per entry point; type declarations with the project's tsc (TypeScript 7,
// --emitDeclarationOnly), copied as .d.cts for require(). The repository itself runs the TypeScript sources.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const here = import.meta.dirname;
const dist = join(here, 'dist');
const entries = ['index', 'express', 'fastify', 'hono'];

rmSync(dist, { recursive: true, force: true });
await Promise.all(
  ['esm', 'cjs'].map((format) =>
    build({
      entryPoints: entries.map((name) => join(here, 'src', `${name}.ts`)),
      outdir: dist,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format,
      outExtension: { '.js': format === 'esm' ? '.js' : '.cjs' },
      logLevel: 'warning',
    }),
  ),
);

const tsc = resolve(here, '../../node_modules/.bin/tsc');
execFileSync(tsc, ['-p', join(here, 'tsconfig.build.json')], { stdio: 'inherit' });
// The sources import each other as `./x.ts`; the published declarations name the built files.
for (const file of readdirSync(dist).filter((name) => name.endsWith('.d.ts'))) {
  const text = readFileSync(join(dist, file), 'utf8');
  writeFileSync(join(dist, file), text.replace(/(from '\.\/[\w-]+)\.ts'/g, "$1.js'"));
  writeFileSync(join(dist, file.replace(/\.d\.ts$/, '.d.cts')), text.replace(/(from '\.\/[\w-]+)\.ts'/g, "$1.cjs'"));
}
