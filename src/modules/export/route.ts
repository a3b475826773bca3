// GET or POST /api/admin/export/{clients|orders|invoices|transactions}.csv: staff download a list as CSV, with the
// list's filters. Not a gateway action: the answer is a stream, not an envelope. Failures before the stream starts
// (no credentials, CSRF, permission, bad filter) answer the usual envelope. The browser panel posts a form carrying
// its CSRF token, so the token never lands in a URL.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate } from '../../http/auth.ts';
import { errors } from '../../platform/errors.ts';
import { setApiHeaders } from '../../http/headers.ts';
import { hasPermission } from '../../platform/identity.ts';
import type { Services } from '../../services.ts';
import { VERSION } from '../../platform/version.ts';
import { createdRange } from '../../platform/list-filters.ts';
import { EXPORT_KINDS, type ExportFilters, type ExportKind } from './service.ts';

/** The permission each export needs: the one that lets staff read the same list. */
export const EXPORT_PERMISSIONS: Record<ExportKind, string> = {
  clients: 'client.view',
  orders: 'order.view',
  invoices: 'invoice.view',
  transactions: 'invoice.view',
};

/** The filters each export accepts, and their allowed values (null = free text, 'id' = a positive integer, 'date' = YYYY-MM-DD). */
const FILTERS: Record<ExportKind, Record<string, readonly string[] | 'id' | 'date' | null>> = {
  clients: { status: ['active', 'suspended', 'canceled'], search: null, date_from: 'date', date_to: 'date' },
  orders: { status: ['pending_setup', 'failed_setup', 'active', 'suspended', 'canceled'], client_id: 'id', product_id: 'id', type: null, search: null, date_from: 'date', date_to: 'date' },
  invoices: { status: ['unpaid', 'paid', 'canceled', 'refunded'], client_id: 'id', search: null, date_from: 'date', date_to: 'date' },
  transactions: { status: ['processed', 'failed', 'refunded', 'error'], client_id: 'id', invoice_id: 'id', gateway: null, search: null, date_from: 'date', date_to: 'date' },
};

/** The request's filters, checked like an action's parameters (422 naming the parameter). Empty values are absent. */
export function readFilters(kind: ExportKind, params: Record<string, unknown>): ExportFilters {
  const out: Record<string, string | number> = {};
  for (const [name, rule] of Object.entries(FILTERS[kind])) {
    const value = params[name];
    if (value === undefined || value === '') continue;
    if (typeof value !== 'string' && typeof value !== 'number') throw errors.invalid(name, 'must be a string');
    const text = String(value);
    if (text.length > 255) throw errors.invalid(name, 'must be at most 255 characters');
    if (rule === 'id') {
      if (!/^[1-9]\d{0,9}$/.test(text) || Number(text) > 2_147_483_647) throw errors.invalid(name, 'must be a positive integer');
      out[name] = Number(text);
    } else if (rule === 'date') {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(Date.parse(`${text}T00:00:00Z`))) throw errors.invalid(name, 'must be a date (YYYY-MM-DD)');
      out[name] = text;
    } else if (rule !== null) {
      if (!rule.includes(text)) throw errors.invalid(name, `must be one of ${rule.join(', ')}`);
      out[name] = text;
    } else out[name] = text;
  }
  // A range that ends before it starts: 422 naming date_to, as on the lists.
  createdRange(out);
  return out;
}

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

export function registerExportRoutes(app: FastifyInstance, services: Services, httpsPossible: boolean): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/api/admin/export/:file',
    async handler(request: FastifyRequest, reply: FastifyReply) {
      setApiHeaders(request, reply, httpsPossible);
      const file = (request.params as { file: string }).file;
      const kind = EXPORT_KINDS.find((name) => `${name}.csv` === file);
      if (kind === undefined) throw errors.unknownAction('admin', 'export', file);
      const query = (request.query ?? {}) as Record<string, unknown>;
      const body = request.method === 'POST' && typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};
      const params = { ...query, ...body };
      const { identity } = await authenticate('admin', request, reply, services, request.ip, params);
      if (identity.role !== 'admin') throw errors.authRequired();
      if (!hasPermission(identity.staff, EXPORT_PERMISSIONS[kind])) throw errors.forbidden(EXPORT_PERMISSIONS[kind]);
      const filters = readFilters(kind, params);

      const chunks = services.csvExports.csv(kind, filters);
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
