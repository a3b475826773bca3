// GET /api/docs: the OpenAPI document rendered as a browsable reference (CONTRACT §11) by Swagger UI, served from the
// installed swagger-ui-dist package: no CDN, nothing fetched from anywhere but this server.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

export const DOCS_PATH = '/api/docs';

// Relative URLs, so the page also works when the server sits under a path prefix behind a proxy.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tollgate API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const INIT = `window.ui = SwaggerUIBundle({ url: 'openapi.json', dom_id: '#reference', deepLinking: true, validatorUrl: null, tryItOutEnabled: false });\n`;

// Swagger UI sets inline style attributes, hence 'unsafe-inline' for styles only; scripts come from this origin.
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  'swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
};

export function registerApiDocs(app: FastifyInstance): void {
  const root = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  // Read once, on first use: the bundle is 1.7 MB and most servers never show the reference.
  const cache = new Map<string, Promise<Buffer>>();
  const load = (file: string): Promise<Buffer> => {
    let found = cache.get(file);
    if (found === undefined) {
      found = readFile(join(root, file));
      cache.set(file, found);
    }
    return found;
  };
  const send = (reply: FastifyReply, type: string, body: string | Buffer, cacheControl: string) =>
    reply.headers({ ...PAGE_HEADERS, 'content-type': type, 'cache-control': cacheControl }).send(body);

  app.get(DOCS_PATH, async (_request, reply) => send(reply, 'text/html; charset=utf-8', PAGE, 'no-cache'));
  app.get(`${DOCS_PATH}/init.js`, async (_request, reply) => send(reply, 'text/javascript; charset=utf-8', INIT, 'no-cache'));
  for (const [name, { file, type }] of Object.entries(ASSETS)) {
    // The package version is pinned, so a day of caching is safe; a new version comes with a restart.
    app.get(`${DOCS_PATH}/${name}`, async (_request, reply) => send(reply, type, await load(file), 'public, max-age=86400'));
  }
}
