// GET /api/admin/serviceapikey/events (CONTRACT §11): Server-Sent Events for verifiers (permission
// `serviceapikey.check`). Not a gateway action: the answer is a stream, not an envelope. Failures before the stream
// starts (no credentials, no permission, rate limit) answer the usual envelope. The key module keeps the feed of key
// changes (serviceapikey/sync/); this file only speaks HTTP, and names what it needs from the rest as `KeyEventsDeps`.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { authenticate, readBasic } from './auth.ts';
import { errors } from '../platform/errors.ts';
import { setApiHeaders } from './headers.ts';
import { hasPermission, type StaffPrincipal } from '../platform/identity.ts';
import { VERIFIER_PERMISSION } from '../platform/permissions.ts';
import { enforce, type RateLimiter } from '../platform/rate-limit.ts';
import { VERSION } from '../platform/version.ts';

export const EVENTS_PATH = '/api/admin/serviceapikey/events';
const MAX_BUFFERED_BYTES = 1024 * 1024;

/** One event of the stream: its id (for Last-Event-ID) and its data. */
export interface StreamEvent {
  id: string;
  data: unknown;
}

/** The key module's feed of key changes, as the stream reads it (serviceapikey/sync/events-stream.ts). */
export interface KeyEventFeed {
  /** The events after `lastId`, or null when they are no longer known (the client must resync). */
  since(lastId: string): StreamEvent[] | null;
  lastId(): string;
  /** Calls `onEvent` for every new event and `onClose` when the feed closes; returns the unsubscribe. */
  subscribe(onEvent: (event: StreamEvent) => void, onClose: () => void): () => void;
}

export interface KeyEventsDeps {
  /** What authenticate needs to know the caller (src/http/auth.ts). */
  auth: Parameters<typeof authenticate>[3];
  limiter: Pick<RateLimiter, 'isExempt' | 'hit'>;
  keepAliveMs: number;
  /** The feed, started on first use. */
  feed(): KeyEventFeed;
  /** The staff member behind the stream's credentials now: by its API token when it came with one, else by id. */
  principal(token: string | null, staffId: number): Promise<StaffPrincipal | null>;
}

function frame(event: StreamEvent): string {
  return `id: ${event.id}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

export function registerKeyEventsRoute(app: FastifyInstance, deps: KeyEventsDeps, httpsPossible: boolean): void {
  const open = new Set<ServerResponse>();
  // Streams never end by themselves: end them before the server closes, or close() would wait for them forever.
  app.addHook('preClose', (done) => {
    for (const response of open) response.end();
    open.clear();
    done();
  });

  app.get(EVENTS_PATH, async (request: FastifyRequest, reply: FastifyReply) => {
    setApiHeaders(request, reply, httpsPossible);
    const ip = request.ip;
    const query = (request.query ?? {}) as Record<string, unknown>;
    const { identity } = await authenticate('admin', request, reply, deps.auth, ip, query, true);
    if (identity.role !== 'admin') throw errors.authRequired();
    if (!deps.limiter.isExempt(ip)) enforce(reply, await deps.limiter.hit('API_KEY_CHECK_VERIFIER', `admin:${identity.staff.id}`));
    if (!hasPermission(identity.staff, VERIFIER_PERMISSION)) throw errors.forbidden(VERIFIER_PERMISSION);

    const hub = deps.feed();
    const lastEventId = request.headers['last-event-id'];
    const replay = typeof lastEventId === 'string' && lastEventId !== '' ? hub.since(lastEventId) : [];

    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-tollgate-version': VERSION,
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
    open.add(raw);
    // The first line tells the client the stream is up; `retry` asks EventSource clients to come back within a second.
    raw.write(': connected\nretry: 1000\n\n');
    if (replay === null) raw.write(frame({ id: hub.lastId(), data: { type: 'resync' } }));
    else for (const event of replay) raw.write(frame(event));

    // The credentials are checked again with every keep-alive: a verifier token rotated or revoked, a staff member
    // deactivated or a group's permission withdrawn loses its open stream within one interval, not never. A failed
    // lookup (database unreachable) keeps the stream: the next interval asks again.
    const token = identity.via === 'token' ? (readBasic(request)?.password ?? null) : null;
    const staffId = identity.staff.id;
    const stillAllowed = async (): Promise<boolean> => {
      const staff = await deps.principal(token, staffId);
      return staff !== null && staff.id === staffId && hasPermission(staff, VERIFIER_PERMISSION);
    };
    const keepAlive = setInterval(() => {
      raw.write(': keep-alive\n\n');
      stillAllowed().then(
        (allowed) => {
          if (!allowed) raw.end();
        },
        () => undefined,
      );
    }, deps.keepAliveMs);
    const unsubscribe = hub.subscribe(
      (event) => {
        // A client that stopped reading must not grow this process's memory: cut it; it reconnects with
        // Last-Event-ID and is replayed what it missed (or told to resync).
        if (raw.writableLength > MAX_BUFFERED_BYTES) raw.destroy();
        else raw.write(frame(event));
      },
      () => raw.end(),
    );
    raw.on('close', () => {
      clearInterval(keepAlive);
      unsubscribe();
      open.delete(raw);
    });
  });
}
