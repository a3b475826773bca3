// Serves the built browser UI (web/dist) from the API's Fastify process: `/` and every other page path → the
// client area's index.html, `/admin` and `/admin/*` → the admin panel's, files by their extension. Paths under
// /api/ and unknown files fall through to the API's not-found handler (the JSON envelope).
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';
// The pages themselves must be revalidated so a new build is picked up at once.
const REVALIDATE = 'no-cache';

const POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors ";

const PAGE_HEADERS = {
  'Content-Security-Policy': `${POLICY}'none'`,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
};

/**
 * The customer portal's pages (`/portal`, `/portal/*`, issue 25): framable by the origins of the
 * portal_frame_ancestors setting (already checked to be plain http(s) origins), by none while it is empty. No
 * X-Frame-Options then: it cannot name origins, and browsers obey frame-ancestors when both are sent.
 */
function portalHeaders(frameAncestors: string | null): Record<string, string> {
  if (frameAncestors === null || frameAncestors === '') return PAGE_HEADERS;
  return {
    'Content-Security-Policy': `${POLICY}${frameAncestors}`,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
  };
}

/**
 * The file under `root` named by a URL path, or null when the path is not a safe, plain relative path (encoded
 * slashes or NULs, `..` segments, dot-files, anything resolving outside `root`).
 */
export function safeFilePath(root: string, urlPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const segments = decoded.split('/').filter((segment) => segment !== '');
  if (segments.some((segment) => segment.startsWith('.'))) return null;
  const file = resolve(root, ...segments);
  return file.startsWith(root + sep) ? file : null;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** `portalFrameAncestors`: the portal_frame_ancestors setting as stored (space-separated origins), read per page. */
export function registerWebUi(app: FastifyInstance, distDir: string, portalFrameAncestors: () => string | null = () => null): void {
  const root = resolve(distDir);
  const clientIndex = join(root, 'index.html');
  const adminIndex = join(root, 'admin', 'index.html');

  async function sendFile(reply: FastifyReply, file: string, cacheControl: string, portal = false): Promise<FastifyReply> {
    const body = await readFile(file);
    const type = CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
    void reply.header('Content-Type', type).header('Cache-Control', cacheControl).header('X-Content-Type-Options', 'nosniff');
    if (type.startsWith('text/html')) void reply.headers(portal ? portalHeaders(portalFrameAncestors()) : PAGE_HEADERS);
    return reply.send(body);
  }

  /** Hands over to the API's not-found handler: the JSON envelope, code 879. */
  function notFound(reply: FastifyReply): FastifyReply {
    reply.callNotFound();
    return reply;
  }

  async function serve(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const path = (request.raw.url ?? '/').split('?')[0] ?? '/';
    if (path === '/api' || path.startsWith('/api/')) return notFound(reply);
    const isAdmin = path === '/admin' || path.startsWith('/admin/');
    const file = safeFilePath(root, path);
    if (file !== null && (await isFile(file))) {
      const isPage = file === clientIndex || file === adminIndex;
      return sendFile(reply, file, path.startsWith('/assets/') ? IMMUTABLE : isPage ? REVALIDATE : 'public, max-age=3600');
    }
    // A path that names a file (has an extension) but none exists is a real 404; any other path is a page of the
    // single-page app, which routes it in the browser.
    if (extname(path) !== '' || path.includes('/.')) return notFound(reply);
    // The portal is the client area in portal mode (web/src/client/portal.ts), served with its own framing policy.
    const isPortal = path === '/portal' || path.startsWith('/portal/');
    return sendFile(reply, isAdmin ? adminIndex : clientIndex, REVALIDATE, isPortal);
  }

  app.get('/', serve);
  app.get('/admin', serve);
  app.get('/admin/*', serve);
  app.get('/assets/*', serve);
  app.get('/*', serve);
}
