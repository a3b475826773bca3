// The TypeScript blocks of the README's two metering sections type-check as printed (with the project's tsc, against
// the real Express, Fastify and Hono types), so the examples cannot drift from the SDK's signatures. Each block becomes
// a file in a scratch folder inside the package (so the frameworks resolve from node_modules), its `@tollgate/sdk`
// imports pointed at the sources, after a preamble that declares the `tollgate` and `key` the README's text provides.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const PACKAGE = resolve(import.meta.dirname, '..');
const TSC = resolve(PACKAGE, '../../node_modules/.bin/tsc');

/** The ```ts blocks between the heading that starts with `from` and the next heading that starts with `to`. */
function tsBlocks(markdown: string, from: string, to: string): string[] {
  const start = markdown.indexOf(`\n${from}`);
  const end = markdown.indexOf(`\n${to}`, start + 1);
  if (start === -1 || end === -1) throw new Error(`the README lost its section "${from}"`);
  return [...markdown.slice(start, end).matchAll(/```ts\n([\s\S]*?)\n```/g)].map((match) => match[1]!);
}

describe('README metering examples', () => {
  it('finds the blocks', () => {
    const blocks = tsBlocks(readFileSync(join(PACKAGE, 'README.md'), 'utf8'), '## Metering: tokens', '## `Tollgate`');
    expect(blocks.length).toBe(4);
    expect(() => tsBlocks('# nothing', '## Metering: tokens', '## `Tollgate`')).toThrow(/lost its section/);
  });

  it('type-check as printed', async () => {
    const blocks = tsBlocks(readFileSync(join(PACKAGE, 'README.md'), 'utf8'), '## Metering: tokens', '## `Tollgate`');
    const dir = mkdtempSync(join(PACKAGE, 'test', '.readme-check-'));
    try {
      const preamble = `import type { Tollgate } from '${join(PACKAGE, 'src/index.ts')}';\ndeclare const tollgate: Tollgate;\ndeclare const key: string;\n`;
      blocks.forEach((block, index) => {
        const code = block.replace(/'@tollgate\/sdk(?:\/(\w+))?'/g, (_all, entry: string | undefined) => `'${join(PACKAGE, 'src', `${entry ?? 'index'}.ts`)}'`);
        writeFileSync(join(dir, `block-${index}.ts`), `${preamble}${code}\nexport {};\n`);
      });
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.json', include: ['*.ts'] }));
      const result = await promisify(execFile)(TSC, ['-p', join(dir, 'tsconfig.json')]).then(
        () => '',
        (error: Error & { stdout?: string }) => error.stdout ?? error.message,
      );
      expect(result).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
