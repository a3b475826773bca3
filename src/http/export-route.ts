// GET or POST /api/admin/export/{clients|orders|invoices|transactions}.csv: staff download a list as CSV, with the
// list's filters. Not a gateway action: the answer is a stream, not an envelope. Failures before the stream starts
// (no credentials, CSRF, permission, bad filter) answer the usual envelope. The browser panel posts a form carrying
// its CSRF token, so the token never lands in a URL. The export module (services.csvExports) says which exports
// there are, what each needs and how its rows read; this file does the HTTP: authentication, headers, the stream.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate } from './auth.ts';
import { errors } from '../platform/errors.ts';
import { setApiHeaders } from './headers.ts';
import { hasPermission } from '../platform/identity.ts';
import { VERSION } from '../platform/version.ts';

/** What the route needs: what authentication needs, and the export module's answer to a file name. */
type ExportRouteServices = Parameters<typeof authenticate>[3] & {
  csvExports: {
    request(file: string): { kind: string; permission: string; rows(params: Record<string, unknown>): AsyncGenerator<string> } | undefined;
  };
};

/** Resolves when the socket has taken what it buffered, or is gone; leaves no listener behind either way. */
function drained(raw: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}

export function registerExportRoutes(app: FastifyInstance, services: ExportRouteServices, httpsPossible: boolean): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/api/admin/export/:file',
    async handler(request: FastifyRequest, reply: FastifyReply) {
      setApiHeaders(request, reply, httpsPossible);
      const file = (request.params as { file: string }).file;
      const exported = services.csvExports.request(file);
      if (exported === undefined) throw errors.unknownAction('admin', 'export', file);
      const { kind, permission } = exported;
      const query = (request.query ?? {}) as Record<string, unknown>;
      const body = request.method === 'POST' && typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};
      const params = { ...query, ...body };
      const { identity } = await authenticate('admin', request, reply, services, request.ip, params);
      if (identity.role !== 'admin') throw errors.authRequired();
      if (!hasPermission(identity.staff, permission)) throw errors.forbidden(permission);
      // The filters are checked here, before anything is sent (422 naming the parameter); the rows are read lazily.
      const chunks = exported.rows(params);
      // The first chunk (the header) is read before the answer is committed, so a database failure still answers the
      // envelope; past this point a failure can only cut the download short, which the reader sees as a broken file.
      const first = await chunks.next();
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="${kind}-${new Date().toISOString().slice(0, 10)}.csv"`,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'x-tollgate-version': VERSION,
      });
      let closed = false;
      raw.on('close', () => (closed = true));
      try {
        if (first.done !== true) raw.write(first.value);
        for await (const chunk of chunks) {
          if (closed) break;
          // Backpressure: the next batch is read from the database only once the socket has taken this one.
          if (!raw.write(chunk)) await drained(raw);
        }
        raw.end();
      } catch (error) {
        request.log.error({ err: error, export: kind }, 'CSV export failed mid-stream');
        raw.destroy();
      }
    },
  });
}
