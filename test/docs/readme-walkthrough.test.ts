// The README's walkthroughs, and the docs/ pages that continue them, run verbatim on a fresh install, in order, from an
// empty database: every ```sh block of WALKTHROUGH_FILES is run by bash, as a reader would paste it, against Tollgate started the way `npm start` starts it (its own process,
// default settings, a SQLite file in a temporary data directory, a real socket), with curl and jq. The rule that
// says which blocks run and how their output comments are read is at the top of test/helpers/readme-blocks.ts and
// in docs/development.md ("The shell blocks run").
//
// The server always uses SQLite, also when TEST_DATABASE_URL is set: this test is about the README, and the
// walkthroughs promise nothing that depends on the database.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkOutput,
  instrument,
  jsonValues,
  markdownFiles,
  OUTPUT_MARK,
  shellBlocks,
  unexpectedError,
  walkthroughBlocks,
  WALKTHROUGH_FILES,
  type FileShellBlock,
} from '../helpers/readme-blocks.ts';

const ROOT = join(import.meta.dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** GS: printed before and after each block by the driver script. */
const BLOCK_MARK = '\u001d';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

interface BashRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a script with bash, asynchronously: the server's output keeps being read meanwhile (a blocked event loop
 * would let its pipe fill and stall it). Killed after 45 s.
 */
function runBash(script: string, cwd: string, env: Record<string, string>): Promise<BashRun> {
  return new Promise((resolve, reject) => {
    const bash = spawn('bash', ['-c', script], {
      cwd,
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    bash.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    bash.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => bash.kill('SIGKILL'), 45_000);
    bash.once('error', reject);
    bash.once('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

function describeBlock(block: FileShellBlock): string {
  return `${block.file} line ${block.line} (section "${block.section}")`;
}

describe('the block rule', () => {
  it('runs sh blocks only, and knows each one\'s line and section', () => {
    const markdown = '# Top\n```sh\necho 1\n```\n## Later\n```shell\necho 2\n```\n```text\nx\n```\n```sh\necho 3\n```';
    expect(shellBlocks(markdown)).toEqual([
      { line: 2, section: 'Top', text: 'echo 1' },
      { line: 12, section: 'Later', text: 'echo 3' },
    ]);
  });

  it('reads comments right after a command as its output, and comments after a blank line as prose', () => {
    const { script, expected } = instrument(
      ['# prose first', 'curl a', '# {"result":', '#  true}', '', '# prose again', 'curl b', '# → "x"'].join('\n'),
    );
    expect(expected).toEqual(['{"result":\n true}', '"x"']);
    expect(script.split('\n').filter((line) => line.startsWith('printf'))).toHaveLength(2);
  });

  it('matches output comments by shape, with … wildcards, ids and timestamps of any value', () => {
    const answer =
      '{"result":{"id":9,"status":"active","expires_at":"2027-01-01T00:00:00.000Z","n":3,"x":1},"error":null}';
    const shown = '{"result":{"id":1,"status":"active","expires_at":"2026-12-22T10:00:00Z"},"error":null}';
    expect(checkOutput(shown, answer)).toBe(null);
    expect(checkOutput('{"result":{"status":"canceled",…},"error":null}', answer)).toMatch(/status/);
    expect(checkOutput('{"result":{"n":4},"error":null}', answer)).toMatch(/expected 4, got 3/);
    expect(checkOutput('{"result":{"missing":…},…}', answer)).toMatch(/no "missing"/);
    expect(checkOutput('{"result":"AB…-…"}', '{"result":"ABC-D"}')).toBe(null);
    expect(checkOutput('{"result":"AB…-…"}', '{"result":"XBC-D"}')).not.toBe(null);
    expect(checkOutput('[1, …]', '[1,2,3]')).toBe(null);
    expect(checkOutput('[1]', '[1,2]')).toMatch(/1 elements, got 2/);
    const status = 'HTTP/1.1 422 Unprocessable Entity';
    expect(checkOutput(`${status}\n{"result":null,…}`, 'HTTP/1.1 422 X\r\na: b\r\n\r\n{"result":null}')).toBe(null);
    expect(checkOutput(status, 'HTTP/1.1 200 OK\r\n\r\n{}')).toMatch(/422, got 200/);
    expect(checkOutput('{"a": 1', '{"a":1}')).toMatch(/not JSON/);
    // The last of several values printed one after another is the one the comment shows.
    expect(jsonValues('{"a":1}{"b":"}"}\ntrue')).toEqual([{ a: 1 }, { b: '}' }, true]);
    const failed = '{"result":null,"error":{"message":"No","code":404}}';
    expect(unexpectedError(`{"result":true,"error":null}${failed}`)).toMatch(/404/);
    expect(unexpectedError('{"result":true,"error":null}')).toBe(null);
  });
});

describe('README walkthroughs', () => {
  const blocks = walkthroughBlocks(ROOT);
  let dir: string;
  let child: ChildProcess;
  let base = '';
  let adminToken = '';
  let serverOutput = '';

  beforeAll(async () => {
    for (const tool of ['bash', 'curl', 'jq']) {
      if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0) {
        throw new Error(`The README walkthrough test needs ${tool} (apt-get install ${tool})`);
      }
    }
    dir = mkdtempSync(join(tmpdir(), 'tollgate-readme-'));
    const port = await freePort();
    base = `http://localhost:${port}`;
    // Defaults only, as a reader starts it: no admin credentials given, so the server prints them.
    child = spawn(process.execPath, ['scripts/start.mjs'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: join(dir, 'data'),
        DATABASE_URL: `sqlite:${join(dir, 'data', 'tollgate.db')}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk: Buffer) => (serverOutput += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (serverOutput += chunk.toString()));
    const deadline = Date.now() + 50_000;
    for (;;) {
      const token = /API token: (\S+)/.exec(serverOutput);
      if (token !== null && /Server listening at/.test(serverOutput)) {
        adminToken = token[1] ?? '';
        break;
      }
      if (child.exitCode !== null) throw new Error(`The server exited (${child.exitCode}):\n${serverOutput}`);
      if (Date.now() > deadline) throw new Error(`The server did not start and print its token:\n${serverOutput}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }, 60_000);

  afterAll(async () => {
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('has the main walkthroughs as runnable blocks', () => {
    for (const walkthrough of ['The API in five calls', 'Selling your first plan', 'Selling API access']) {
      const start = README.indexOf(`\n## ${walkthrough}\n`);
      expect(start, walkthrough).toBeGreaterThan(-1);
      const next = README.indexOf('\n## ', start + 1);
      const own = shellBlocks(README.slice(start, next === -1 ? undefined : next));
      expect(own.length, walkthrough).toBeGreaterThanOrEqual(3);
    }
  });

  it('runs the sh blocks of every document that has them: each is in WALKTHROUGH_FILES', () => {
    // A document moved or added with runnable blocks must not be skipped silently: list it in WALKTHROUGH_FILES.
    const withBlocks = markdownFiles(ROOT).filter((file) => shellBlocks(readFileSync(join(ROOT, file), 'utf8')).length > 0);
    expect(WALKTHROUGH_FILES.toSorted()).toEqual(withBlocks.toSorted());
    expect(blocks.length).toBe(
      WALKTHROUGH_FILES.reduce((sum, file) => sum + shellBlocks(readFileSync(join(ROOT, file), 'utf8')).length, 0),
    );
  });

  it('the first start prints the admin URL next to the credentials, as the README says', () => {
    // PUBLIC_URL is unset here, so it defaults to http://localhost:<PORT>, which is `base`.
    const notice = /Created the first administrator:\n {2}e-mail: +(\S+)\n {2}password: +\S+\n {2}API token: +\S+\n {2}admin URL: (\S+)\n/.exec(
      serverOutput,
    );
    expect(notice, serverOutput).not.toBe(null);
    expect(notice?.[2]).toBe(`${base}/admin`);
    expect(README).toContain('admin URL: http://localhost:8080/admin');
  });

  it('runs every sh block in order against a fresh server, with the outputs the documents show', async () => {
    const work = join(dir, 'reader');
    mkdirSync(work);
    const instrumented = blocks.map((block) => instrument(block.text));
    const driver = ['set -eo pipefail'];
    for (const [index, { script }] of instrumented.entries()) {
      const file = join(dir, `block-${index}.sh`);
      writeFileSync(file, `${script}\n`);
      const mark = `printf '\\035%d\\035' ${index}`;
      driver.push(mark, `source ${JSON.stringify(file)}`, mark);
    }
    const run = await runBash(driver.join('\n'), work, { TOLLGATE: base, ADMIN_TOKEN: adminToken, HOME: dir });
    // The driver prints the mark, the index and the mark before and after each block: pieces 2, 6, 10… are outputs.
    const pieces = run.stdout.split(BLOCK_MARK);
    const outputs: string[] = [];
    for (let i = 2; i < pieces.length; i += 4) outputs.push(pieces[i] ?? '');
    const finished = Math.floor((pieces.length - 1) / 4);
    // The outputs of the blocks that finished first: a wrong answer there is the cause of any later failure.
    for (const [index, block] of blocks.slice(0, finished).entries()) {
      const parts = (outputs[index] ?? '').split(OUTPUT_MARK);
      const { expected } = instrumented[index]!;
      for (const [position, part] of parts.entries()) {
        const wanted = expected[position];
        // Output the README shows is checked against it; any other output must hold no error envelope.
        const shown = wanted === undefined ? null : checkOutput(wanted, part);
        const failed = shown ?? (wanted !== undefined && /"error":\s*\{/.test(wanted) ? null : unexpectedError(part));
        if (failed !== null) {
          const shownOutput = outputs[index] ?? '';
          throw new Error(`${describeBlock(block)}: ${failed}\n${block.text}\n--- its output ---\n${shownOutput}`);
        }
      }
    }
    if (run.status !== 0 || finished !== blocks.length) {
      const failed = blocks[finished];
      const own = failed === undefined ? run.stdout : pieces.slice(2 + finished * 4).join('');
      throw new Error(
        `${failed === undefined ? 'The walkthrough' : describeBlock(failed)} failed (exit status ${run.status}, ` +
          `${run.signal ?? 'no signal'}):\n${failed?.text ?? ''}\n--- its output ---\n${own}\n` +
          `--- stderr ---\n${run.stderr}`,
      );
    }
  }, 60_000);
});
