// Every relative link in README.md and docs/*.md reaches an existing file or folder and, with a #fragment, a heading
// of that file (anchors as GitHub makes them); numbered step headings under one section count 1, 2, 3… without a
// repeat or a gap. The documentation is split over many files and edited by many hands: a moved section must not
// leave a dead link behind.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { markdownFiles } from '../helpers/readme-blocks.ts';

const ROOT = join(import.meta.dirname, '../..');

/** The text outside fenced code blocks, each fenced line blanked so line numbers stay true. */
function prose(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped (not `-` or `_`), each space a `-`. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown text's headings, with GitHub's -1, -2… for repeats. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const line of prose(markdown)) {
    const heading = /^#{1,6} (.+?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const base = slug(heading[1] ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

export interface Link {
  line: number;
  target: string;
}

/** Relative links and images of a Markdown text (not inside code), with their lines. */
export function relativeLinks(markdown: string): Link[] {
  const lines = prose(markdown).map((line) => line.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length)));
  const text = lines.join('\n');
  const links: Link[] = [];
  for (const match of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = match[1] ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
    links.push({ line: text.slice(0, match.index).split('\n').length, target });
  }
  return links;
}

/** Why a link from `file` (relative to `root`) does not resolve, or null when it does. */
export function brokenLink(root: string, file: string, target: string): string | null {
  const [path = '', fragment] = target.split('#', 2);
  const resolved = path === '' ? join(root, file) : normalize(join(root, dirname(file), decodeURIComponent(path)));
  if (relative(root, resolved).startsWith('..')) return `${target} leaves the repository`;
  if (!existsSync(resolved)) return `${target}: no such file or folder`;
  if (fragment === undefined) return null;
  if (!statSync(resolved).isFile() || !resolved.endsWith('.md')) return `${target}: a fragment on a file that is not Markdown`;
  const own = anchors(readFileSync(resolved, 'utf8'));
  return own.has(fragment) ? null : `${target}: no heading with the anchor #${fragment}`;
}

/** Numbered headings (`### 2. …`) that do not count 1, 2, 3… among their siblings under one parent heading. */
export function misnumbered(markdown: string): string[] {
  const problems: string[] = [];
  /** The last number seen at each heading level, reset when a heading of a higher level starts a new section. */
  const last = new Map<number, number>();
  for (const [index, line] of prose(markdown).entries()) {
    const heading = /^(#{1,6}) (.*)$/.exec(line);
    if (heading === null) continue;
    const level = heading[1]?.length ?? 0;
    // Deleting the current entry while iterating a Map is safe in JavaScript.
    for (const deeper of last.keys()) if (deeper > level) last.delete(deeper);
    const number = /^(\d+)\. /.exec(heading[2] ?? '');
    if (number === null) continue;
    const expected = (last.get(level) ?? 0) + 1;
    if (Number(number[1]) !== expected) problems.push(`line ${index + 1}: "${heading[2]}" should be step ${expected}`);
    last.set(level, Number(number[1]));
  }
  return problems;
}

describe('the link checker', () => {
  it('makes anchors as GitHub does, repeats numbered', () => {
    expect(slug('Every core: `WORKERS`')).toBe('every-core-workers');
    expect(slug("The key check's own road")).toBe('the-key-checks-own-road');
    expect(slug('Two-factor login (TOTP)')).toBe('two-factor-login-totp');
    expect(slug('The key check without a round trip; how far a limit can be overshot')).toBe(
      'the-key-check-without-a-round-trip-how-far-a-limit-can-be-overshot',
    );
    expect([...anchors('# A\n## Step\n```sh\n# not a heading\n```\n## Step\n')]).toEqual(['a', 'step', 'step-1']);
  });

  it('finds relative links outside code, and says which do not resolve', () => {
    const markdown = 'See [a](docs/x.md#y), [web](https://example.com), `[no](code.md)`\n```\n[no](block.md)\n```\n![i](p.png)';
    expect(relativeLinks(markdown)).toEqual([
      { line: 1, target: 'docs/x.md#y' },
      { line: 5, target: 'p.png' },
    ]);
    expect(brokenLink(ROOT, 'README.md', 'docs/README.md')).toBe(null);
    expect(brokenLink(ROOT, 'docs/README.md', '../README.md#first-steps')).toBe(null);
    expect(brokenLink(ROOT, 'docs/README.md', 'screenshots/')).toBe(null);
    expect(brokenLink(ROOT, 'README.md', 'docs/nowhere.md')).toMatch(/no such file/);
    expect(brokenLink(ROOT, 'README.md', '#nowhere')).toMatch(/no heading/);
    expect(brokenLink(ROOT, 'README.md', '../outside.md')).toMatch(/leaves the repository/);
  });

  it('wants numbered steps to count 1, 2, 3 under each section', () => {
    expect(misnumbered('## A\n### 1. x\n### 2. y\n## B\n### 1. z')).toEqual([]);
    expect(misnumbered('## A\n### 1. x\n### 5. y\n### 5. z')).toEqual([
      'line 3: "5. y" should be step 2',
      'line 4: "5. z" should be step 6',
    ]);
  });
});

describe('README.md and docs/*.md', () => {
  const files = markdownFiles(ROOT);

  it.each(files)('%s: every relative link resolves', (file) => {
    const broken = relativeLinks(readFileSync(join(ROOT, file), 'utf8'))
      .map((link) => ({ ...link, problem: brokenLink(ROOT, file, link.target) }))
      .filter((link) => link.problem !== null)
      .map((link) => `${file}:${link.line}: ${link.problem}`);
    expect(broken).toEqual([]);
  });

  it.each(files)('%s: numbered step headings count 1, 2, 3 without a repeat', (file) => {
    expect(misnumbered(readFileSync(join(ROOT, file), 'utf8'))).toEqual([]);
  });

  it('the README keeps to a newcomer: the two commands first, under about 470 lines (four capabilities came with issues 24–26)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const top = readme.split('\n').slice(0, 12).join('\n');
    expect(top).toContain('npm install && npm start');
    expect(top).toContain('npm test');
    expect(readme.split('\n').length).toBeLessThanOrEqual(470);
  });
});
