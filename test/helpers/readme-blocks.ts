// The runnable shell blocks of the README and of the docs/ files that continue its walkthroughs, and the outputs
// they promise, for test/docs/readme-walkthrough.test.ts.
//
// The rule (stated in docs/development.md, "The shell blocks run", too):
// - A fenced block whose info string is exactly `sh` runs, file by file in WALKTHROUGH_FILES order and in each file's
//   order, in one bash session (`set -eo pipefail`) against a fresh server, with `TOLLGATE` (the base URL) and
//   `ADMIN_TOKEN` (the first administrator's API token) set. Any other fence (`shell`, `text`, `ts`, `yaml`, none) is
//   shown only.
// - Inside an `sh` block, `#` lines that follow a command directly (no blank line between) show that command's
//   output; a `#` line after a blank line is prose. Output comments are JSON in which `…` (or `...`) stands for
//   "anything here": as a value, as an array element or object entry ("more of them"), or inside a string (a
//   wildcard). Objects may hold more keys than shown. Strings and numbers must be equal, except dates and timestamps
//   (any of the same form) and ids (keys `id` and `*_id`, and a numeric `result`: any number). `HTTP/1.1 422 …` as
//   the first line of an output comment is the status line of `curl -i`.
// - A command whose output has no comment may print anything but an error envelope.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The files whose `sh` blocks run, in the order they run. A later file may use what an earlier one set (the docs'
 * examples continue the README's walkthroughs), so a new file goes after the ones whose variables it uses.
 */
export const WALKTHROUGH_FILES = ['README.md', 'docs/api-keys.md', 'docs/selling.md', 'docs/pricing-by-use.md'] as const;

/** README.md and every docs/*.md, relative to the repository root: where runnable blocks may live. */
export function markdownFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .toSorted()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

export interface ShellBlock {
  /** 1-based line of the opening fence. */
  line: number;
  /** The nearest heading above the block. */
  section: string;
  text: string;
}

/** A block and the file (relative to the repository root) it comes from. */
export interface FileShellBlock extends ShellBlock {
  file: string;
}

/** Every `sh` block of WALKTHROUGH_FILES, in the order they run. */
export function walkthroughBlocks(root: string): FileShellBlock[] {
  return WALKTHROUGH_FILES.flatMap((file) =>
    shellBlocks(readFileSync(join(root, file), 'utf8')).map((block) => ({ ...block, file })),
  );
}

/** Every fenced ```sh block of a Markdown text, in order. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const fence = /^```(.*)$/.exec(line);
    if (fence === null) {
      const heading = /^#{1,6} (.*)$/.exec(line);
      if (heading !== null) section = heading[1] ?? '';
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i++) body.push(lines[i] ?? '');
    if ((fence[1] ?? '').trim() === 'sh') blocks.push({ line: start + 1, section, text: body.join('\n') });
  }
  return blocks;
}

/** RS: printed by the instrumented block before each output comment's place, to cut the output into pieces. */
export const OUTPUT_MARK = '\u001e';

export interface Instrumented {
  /** The block with a `printf` of OUTPUT_MARK where each output comment begins. */
  script: string;
  /** The output comments, in order (without `# ` and a leading `→ `). */
  expected: string[];
}

/** Marks where each output comment's command ends, so the block's output can be cut into one piece per comment. */
export function instrument(text: string): Instrumented {
  const out: string[] = [];
  const expected: string[] = [];
  let previous: 'blank' | 'command' | 'output' | 'prose' = 'blank';
  for (const line of text.split('\n')) {
    const isComment = /^\s*#/.test(line);
    if (!isComment) {
      out.push(line);
      previous = line.trim() === '' ? 'blank' : 'command';
      continue;
    }
    const content = line.replace(/^\s*# ?/, '');
    if (previous === 'command') {
      out.push(`printf '\\036'`);
      expected.push(content.replace(/^→\s*/, ''));
      previous = 'output';
    } else if (previous === 'output') {
      expected[expected.length - 1] += `\n${content}`;
    } else {
      previous = 'prose';
    }
    out.push(line);
  }
  return { script: out.join('\n'), expected };
}

// --- output comments as patterns ------------------------------------------------------------------------------

const ANY = Symbol('any');
type Pattern =
  | typeof ANY
  | null
  | boolean
  | number
  | { glob: string }
  | { list: Pattern[]; more: boolean }
  | { entries: [string, Pattern][] };

/** Parses JSON extended with `…`/`...` wildcards. Throws on anything else. */
export function parsePattern(text: string): Pattern {
  let at = 0;
  const space = (): void => {
    while (at < text.length && /\s/.test(text[at] ?? '')) at++;
  };
  const ellipsis = (): boolean => {
    space();
    if (text.startsWith('…', at)) at += 1;
    else if (text.startsWith('...', at)) at += 3;
    else return false;
    return true;
  };
  const expect = (char: string): void => {
    space();
    if (text[at] !== char) throw new Error(`expected ${char} at ${at} in ${text}`);
    at++;
  };
  const string = (): string => {
    space();
    const start = at;
    expect('"');
    while (at < text.length && text[at] !== '"') at += text[at] === '\\' ? 2 : 1;
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const value = (): Pattern => {
    if (ellipsis()) return ANY;
    space();
    const char = text[at];
    if (char === '{') {
      at++;
      const entries: [string, Pattern][] = [];
      space();
      if (text[at] === '}') return at++, { entries };
      for (;;) {
        if (!ellipsis()) {
          const key = string();
          expect(':');
          entries.push([key, value()]);
        }
        space();
        if (text[at] === '}') return at++, { entries };
        expect(',');
      }
    }
    if (char === '[') {
      at++;
      const list: Pattern[] = [];
      let more = false;
      space();
      if (text[at] === ']') return at++, { list, more };
      for (;;) {
        if (ellipsis()) more = true;
        else list.push(value());
        space();
        if (text[at] === ']') return at++, { list, more };
        expect(',');
      }
    }
    if (char === '"') return { glob: string() };
    const token = /^(true|false|null|-?\d+(\.\d+)?([eE][+-]?\d+)?)/.exec(text.slice(at));
    if (token === null) throw new Error(`cannot read ${JSON.stringify(text.slice(at, at + 20))}`);
    at += token[0].length;
    return JSON.parse(token[0]) as null | boolean | number;
  };
  const pattern = value();
  space();
  if (at !== text.length) throw new Error(`unexpected ${JSON.stringify(text.slice(at, at + 20))}`);
  return pattern;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

function isId(key: string): boolean {
  return key === 'id' || key.endsWith('_id');
}

/** Where `actual` departs from `pattern` (a path and why), or null when it matches. */
export function mismatch(pattern: Pattern, actual: unknown, path = '$', key = ''): string | null {
  if (pattern === ANY) return null;
  const got = (): string => `${path}: expected ${describe(pattern)}, got ${JSON.stringify(actual)}`;
  if (pattern === null || typeof pattern === 'boolean') return actual === pattern ? null : got();
  if (typeof pattern === 'number') {
    if (typeof actual !== 'number') return got();
    return isId(key) || key === 'result' || actual === pattern ? null : got();
  }
  if ('glob' in pattern) {
    if (typeof actual !== 'string') return got();
    const glob = pattern.glob;
    if (TIMESTAMP.test(glob)) return TIMESTAMP.test(actual) ? null : got();
    if (DATE.test(glob)) return DATE.test(actual) ? null : got();
    const parts = glob.split(/…|\.\.\./).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    return new RegExp(`^${parts.join('[\\s\\S]*')}$`).test(actual) ? null : got();
  }
  if ('list' in pattern) {
    if (!Array.isArray(actual)) return got();
    if (pattern.more ? actual.length < pattern.list.length : actual.length !== pattern.list.length) {
      const least = pattern.more ? 'at least ' : '';
      return `${path}: expected ${least}${pattern.list.length} elements, got ${actual.length}`;
    }
    for (const [index, element] of pattern.list.entries()) {
      const found = mismatch(element, actual[index], `${path}[${index}]`, key);
      if (found !== null) return found;
    }
    return null;
  }
  if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return got();
  for (const [name, element] of pattern.entries) {
    if (!(name in actual)) return `${path}: no "${name}" in ${JSON.stringify(actual)}`;
    const found = mismatch(element, (actual as Record<string, unknown>)[name], `${path}.${name}`, name);
    if (found !== null) return found;
  }
  return null;
}

function describe(pattern: Pattern): string {
  if (pattern === ANY) return 'anything';
  if (pattern === null || typeof pattern !== 'object') return JSON.stringify(pattern);
  if ('glob' in pattern) return JSON.stringify(pattern.glob);
  return 'list' in pattern ? 'an array' : 'an object';
}

/** The JSON values printed one after another (curl prints no newline after a body), or null if the text is not JSON. */
export function jsonValues(text: string): unknown[] | null {
  const values: unknown[] = [];
  let at = 0;
  while (at < text.length) {
    while (at < text.length && /\s/.test(text[at] ?? '')) at++;
    if (at >= text.length) break;
    const start = at;
    const open = text[at];
    if (open === '{' || open === '[') {
      let depth = 0;
      for (; at < text.length; at++) {
        const char = text[at];
        if (char === '"') {
          for (at++; at < text.length && text[at] !== '"'; at += text[at] === '\\' ? 2 : 1);
        } else if (char === '{' || char === '[') depth++;
        else if (char === '}' || char === ']') {
          depth--;
          if (depth === 0) break;
        }
      }
      at++;
    } else if (open === '"') {
      for (at++; at < text.length && text[at] !== '"'; at += text[at] === '\\' ? 2 : 1);
      at++;
    } else {
      while (at < text.length && !/[\s{["]/.test(text[at] ?? '')) at++;
    }
    try {
      values.push(JSON.parse(text.slice(start, at)));
    } catch {
      return null;
    }
  }
  return values;
}

/**
 * Checks one piece of a block's output against its output comment: the last JSON value printed must match, or for
 * `HTTP/…` comments the status of `curl -i`'s last answer and its body. Returns why it does not, or null.
 */
export function checkOutput(expected: string, actual: string): string | null {
  let body = actual;
  let shown = expected;
  if (expected.startsWith('HTTP/')) {
    const [statusLine = '', ...rest] = expected.split('\n');
    const wanted = statusLine.split(' ')[1];
    const statuses = [...actual.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)];
    const status = statuses.at(-1);
    if (status === undefined) return `expected "${statusLine}", but no HTTP status line was printed`;
    if (status[1] !== wanted) return `expected HTTP status ${wanted}, got ${status[1]}`;
    body = actual.slice((status.index ?? 0) + status[0].length).replace(/^[\s\S]*?\r?\n\r?\n/, '');
    shown = rest.join('\n');
    if (shown.trim() === '') return null;
  }
  let pattern: Pattern;
  try {
    pattern = parsePattern(shown);
  } catch (error) {
    return `the output comment is not JSON with … wildcards (${(error as Error).message})`;
  }
  const values = jsonValues(body);
  if (values === null || values.length === 0) return `expected JSON output, got ${JSON.stringify(body)}`;
  return mismatch(pattern, values.at(-1));
}

/** An error envelope in output that has no comment showing it: the README promises success there. */
export function unexpectedError(actual: string): string | null {
  const found = /\{"result":\s*null,\s*"error":\s*\{[^}]*\}\}/.exec(actual) ?? /"error":\s*\{[^}]*\}/.exec(actual);
  return found === null ? null : `an API call failed: ${found[0]}`;
}
