// Customer-portal links (issue 25): a single-use URL that, opened once before it expires, becomes a client session
// restricted to the link's scopes (src/modules/portal/scopes.ts) and ending when the link would have. The only writer
// of `portal_links`. The token travels in the URL's fragment (`/portal#token=…`), so it never reaches a server log,
// a proxy or a Referer header; the page posts it to guest/portal/open.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { newOpaqueToken, safeEqual, type SecretBox } from '../../lib/crypto.ts';
import { originsOf, returnUrlProblem } from '../../lib/origins.ts';
import { addSeconds, isoSeconds } from '../../lib/time.ts';
import { errors } from '../../platform/errors.ts';
import type { PortalGrant } from '../../platform/session.ts';
import type { ClientService } from '../client/service.ts';
import { PORTAL_SCOPES, type PortalScope } from './scopes.ts';

/** How long a link (and the session it becomes) lives, in seconds: 15 minutes by default, 1 minute to 24 hours. */
export const PORTAL_EXPIRES_IN = { default: 900, min: 60, max: 86_400 } as const;

// Links that ended a day ago or more are deleted when a new one is made: kept a while so a late "already used"
// answer stays an answer, not a mystery, and no scheduler task is needed for a table that grows only with use.
const KEEP_ENDED_MS = 86_400_000;

export interface PortalLinkRecord {
  id: number;
  url: string;
  client_id: number;
  scopes: PortalScope[];
  return_url: string | null;
  expires_at: string;
}

export interface PortalServiceDeps {
  db: Kysely<Database>;
  secrets: SecretBox;
  clients: Pick<ClientService, 'get'>;
  /** The origins of the portal_frame_ancestors setting (also the only ones a return_url may point at once set). */
  frameAncestors: () => string | null;
  /** PUBLIC_URL: where the link points. */
  publicUrl: string;
}

/** The opened link: whose session to start, and its grant. */
export interface OpenedLink {
  clientId: number;
  grant: PortalGrant;
}

export function createPortalService({ db, secrets, clients, frameAncestors, publicUrl }: PortalServiceDeps) {
  const base = publicUrl.replace(/\/+$/, '');
  return {
    /** A new single-use link for `clientId`'s portal; the URL (with its token) is returned here only. */
    async createLink(
      createdBy: number,
      input: { client_id: number; scopes?: PortalScope[] | undefined; return_url?: string | undefined; expires_in?: number | undefined },
      now = new Date(),
    ): Promise<PortalLinkRecord> {
      const client = await clients.get(input.client_id);
      if (client.status !== 'active') throw errors.conflict(`The client is ${client.status}: a portal opens only for an active client`);
      const returnUrl = input.return_url === undefined || input.return_url === '' ? null : input.return_url;
      if (returnUrl !== null) {
        const problem = returnUrlProblem(returnUrl, originsOf(frameAncestors()));
        if (problem !== null) throw errors.invalid('return_url', problem);
      }
      // In the catalogue's order, each once: the stored list and the answer read the same whatever order was sent.
      const asked = input.scopes ?? PORTAL_SCOPES;
      const scopes = PORTAL_SCOPES.filter((scope) => asked.includes(scope));
      const expiresAt = isoSeconds(addSeconds(now, input.expires_in ?? PORTAL_EXPIRES_IN.default));
      const token = newOpaqueToken();
      await db.deleteFrom('portal_links').where('expires_at', '<', isoSeconds(new Date(now.getTime() - KEEP_ENDED_MS))).execute();
      const row = await db
        .insertInto('portal_links')
        .values({
          token_hash: secrets.hash(token),
          client_id: client.id,
          scopes: scopes.join(','),
          return_url: returnUrl,
          created_by: createdBy,
          expires_at: expiresAt,
          used_at: null,
          created_at: isoSeconds(now),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return { id: row.id, url: `${base}/portal#token=${token}`, client_id: client.id, scopes, return_url: returnUrl, expires_at: expiresAt };
    },

    /**
     * Marks the link of `token` used and answers what session it opens; 422 when the token names no link, or one
     * already used or expired (one answer for all three, so a guess learns nothing). The compare-and-set on
     * `used_at` lets exactly one of two simultaneous opens win.
     */
    async open(token: string, now = new Date()): Promise<OpenedLink> {
      const refused = errors.invalid('token', 'names no portal link, or one that expired or was already used');
      if (token.length > 128) throw refused;
      const hash = secrets.hash(token);
      const row = await db.selectFrom('portal_links').selectAll().where('token_hash', '=', hash).executeTakeFirst();
      // The index found the row by its hash; the hashes are compared once more in constant time all the same.
      if (row === undefined || !safeEqual(row.token_hash, hash)) throw refused;
      const at = isoSeconds(now);
      if (row.used_at !== null || row.expires_at <= at) throw refused;
      const claimed = await db
        .updateTable('portal_links')
        .set({ used_at: at })
        .where('id', '=', row.id)
        .where('used_at', 'is', null)
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) !== 1) throw refused;
      return { clientId: row.client_id, grant: { scopes: row.scopes.split(','), returnUrl: row.return_url, endsAt: row.expires_at } };
    },
  };
}

export type PortalService = ReturnType<typeof createPortalService>;
