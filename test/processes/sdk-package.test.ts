// Issue 21 item 12: the SDK installs like a package. `npm pack` builds it (JavaScript + declarations); the tarball
// installs offline into an app outside the repository; the Express snippet of docs/integrating.md type-checks as
// printed with the project's tsc and, with its types stripped, runs on plain `node app.js` against a real Tollgate
// process; CommonJS `require` works too; and a verifier token Tollgate refuses is reported once, as UNAUTHORIZED.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { transform } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sellKey, startTollgate, type TollgateProcess } from '../../packages/sdk/test/server.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const SNIPPET_MARKER = '<!-- express-snippet: checked by test/processes/sdk-package.test.ts -->';

/** The ```ts block right after the marker in docs/integrating.md, exactly as printed. */
async function expressSnippet(): Promise<string> {
  const doc = await readFile(join(ROOT, 'docs/integrating.md'), 'utf8');
  const match = new RegExp(`${SNIPPET_MARKER}\\n\`\`\`ts\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(doc);
  if (match === null) throw new Error('docs/integrating.md lost its checked Express snippet');
  return `${match[1]!}\n`;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

interface App {
  child: ChildProcess;
  stderr: () => string;
  stop: () => Promise<void>;
}

/** `node <file>` in the app folder, plain (no loader, no flags); resolves once `url` answers. */
async function startApp(dir: string, file: string, env: Record<string, string>, url: string): Promise<App> {
  const child = spawn(process.execPath, [file], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await exited;
  };
  for (let attempt = 0; attempt < 100; attempt++) {
    if (child.exitCode !== null) throw new Error(`${file} exited (${child.exitCode}): ${stderr}`);
    if (await fetch(url).then(() => true, () => false)) return { child, stderr: () => stderr, stop };
    await new Promise((done) => setTimeout(done, 100));
  }
  await stop();
  throw new Error(`${file} did not answer: ${stderr}`);
}

describe('@tollgate/sdk as a package (issue 21 item 12)', () => {
  let server: TollgateProcess;
  let key: string;
  let verifierToken: string;
  let work: string;
  let app: string;

  beforeAll(async () => {
    server = await startTollgate();
    ({ key } = await sellKey(server, { custom: { tier: 'pro' } }));
    verifierToken = ((await server.admin('staff/verifier_create', { name: 'Package test' })).result as { token: string }).token;
    // Outside the repository: nothing can resolve the workspace's sources or its node_modules by accident.
    work = await mkdtemp(join(tmpdir(), 'tollgate-sdk-package-'));
    app = join(work, 'app');
    await mkdir(app);
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'sdk-user-app', private: true, type: 'module' }));
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  it('packs into a tarball of built JavaScript and declarations, which installs offline into an app', async () => {
    await run('npm', ['pack', '--pack-destination', work, '--json'], { cwd: join(ROOT, 'packages/sdk') });
    const tarball = (await readdir(work)).find((name) => name.endsWith('.tgz'));
    expect(tarball).toBe('tollgate-sdk-0.1.0.tgz');
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(work, tarball!)], { cwd: app });
    const installed = join(app, 'node_modules/@tollgate/sdk');
    const files = (await readdir(join(installed, 'dist'))).toSorted();
    for (const name of ['index', 'express', 'fastify', 'hono']) expect(files).toEqual(expect.arrayContaining([`${name}.js`, `${name}.cjs`, `${name}.d.ts`, `${name}.d.cts`]));
    expect(files.some((name) => name.endsWith('.ts') && !name.endsWith('.d.ts') && !name.endsWith('.d.cts'))).toBe(false);
    expect(await readdir(installed)).not.toContain('src');
    // Express for the snippet, from the repository's install (symlinked: the app's own install stays offline).
    await symlink(join(ROOT, 'node_modules/express'), join(app, 'node_modules/express'));
    await symlink(join(ROOT, 'node_modules/@types'), join(app, 'node_modules/@types'));
  }, 60_000);

  it("type-checks docs/integrating.md's Express snippet as printed, with the installed declarations (strict)", async () => {
    await writeFile(join(app, 'app.ts'), await expressSnippet());
    await writeFile(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', noUncheckedIndexedAccess: true, types: ['node'], skipLibCheck: true },
        files: ['app.ts'],
      }),
    );
    await run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(app, 'tsconfig.json')], { cwd: app }).catch((error: { stdout?: string }) => {
      throw new Error(`the printed Express snippet does not type-check:\n${error.stdout}`);
    });
    // Without the augmentation, `req.tollgate` is unknown to Express's types: the block is needed, not decoration.
    const bare = (await expressSnippet()).replace(/declare global \{[\s\S]*?\n\}\n/, '');
    await writeFile(join(app, 'app.ts'), bare);
    await expect(run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(app, 'tsconfig.json')], { cwd: app })).rejects.toMatchObject({ stdout: expect.stringContaining('tollgate') });
    await writeFile(join(app, 'app.ts'), await expressSnippet());
  }, 60_000);

  /** app.js: the snippet with its types stripped, pointed at this Tollgate and a free port; answers /data's URL. */
  async function writeAppJs(): Promise<string> {
    const port = await freePort();
    const source = (await expressSnippet()).replace("'https://billing.example.com'", JSON.stringify(server.baseUrl)).replace('app.listen(3000)', `app.listen(${port}, '127.0.0.1')`);
    await writeFile(join(app, 'app.js'), (await transform(source, { loader: 'ts', format: 'esm' })).code);
    return `http://127.0.0.1:${port}/data`;
  }

  it('runs the snippet on plain `node app.js` against Tollgate: no key 401, a valid key passes with its config, a wrong one 401', async () => {
    const url = await writeAppJs();
    const running = await startApp(app, 'app.js', { TOLLGATE_VERIFIER_TOKEN: verifierToken }, url);
    try {
      const none = await fetch(url);
      expect(none.status).toBe(401);
      expect(await none.json()).toMatchObject({ error: { code: 'MISSING_KEY' } });
      const valid = await fetch(url, { headers: { 'x-api-key': key } });
      expect(valid.status).toBe(200);
      expect(await valid.json()).toEqual({ tier: 'pro' });
      const wrong = await fetch(url, { headers: { authorization: 'Bearer AAAAAAAA-BBBBBBBB-CCCCCCCC-DDDDDDDD' } });
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toMatchObject({ error: { code: 'INVALID_KEY' } });
      expect(running.stderr()).toBe('');
    } finally {
      await running.stop();
    }
  }, 60_000);

  it('answers 500 VERIFIER_UNAUTHORIZED when Tollgate refuses the token, and says so once on stderr, never echoing the token', async () => {
    const url = await writeAppJs();
    const wrongToken = 'not-a-verifier-token-5f1d';
    const running = await startApp(app, 'app.js', { TOLLGATE_VERIFIER_TOKEN: wrongToken }, url);
    try {
      for (let i = 0; i < 3; i++) {
        const reply = await fetch(url, { headers: { 'x-api-key': key } });
        expect(reply.status).toBe(500);
        expect(reply.headers.get('retry-after')).toBeNull();
        expect(await reply.json()).toMatchObject({ error: { code: 'VERIFIER_UNAUTHORIZED' } });
      }
      const lines = running.stderr().split('\n').filter((line) => line.includes('verifier token'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('[@tollgate/sdk]');
      expect(running.stderr()).not.toContain(wrongToken);
    } finally {
      await running.stop();
    }
  }, 60_000);

  it('works from CommonJS too: require() on plain node', async () => {
    await writeFile(
      join(app, 'check.cjs'),
      `const { Tollgate } = require('@tollgate/sdk');
const { tollgateExpress } = require('@tollgate/sdk/express');
const tollgate = new Tollgate({ baseUrl: process.env.TOLLGATE_URL, token: process.env.TOLLGATE_VERIFIER_TOKEN });
tollgate.verify(process.env.KEY).then(async (result) => {
  await tollgate.close();
  console.log(JSON.stringify({ reason: result.reason, config: result.config, middleware: typeof tollgateExpress }));
});
`,
    );
    const { stdout } = await run(process.execPath, ['check.cjs'], { cwd: app, env: { PATH: process.env.PATH ?? '', TOLLGATE_URL: server.baseUrl, TOLLGATE_VERIFIER_TOKEN: verifierToken, KEY: key } });
    expect(JSON.parse(stdout)).toEqual({ reason: 'VALID', config: { tier: 'pro' }, middleware: 'function' });
  }, 60_000);
});
