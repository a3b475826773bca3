// portal: the customer portal to embed (issue 25, docs/portal.md). Staff or the operator's app server (a verifier
// token given the `portal` scope) make a single-use link for one client; the page it opens posts the link's token to
// guest/portal/open, which starts a client session restricted to the link's scopes; client/portal/get tells the page
// what it may show.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { errors } from '../../platform/errors.ts';
import { PORTAL_PERMISSION } from '../../platform/permissions.ts';
import { Nullable, Timestamp } from '../../platform/schemas.ts';
import { PORTAL_EXPIRES_IN, type PortalService } from './service.ts';
import { PORTAL_SCOPES } from './scopes.ts';

export interface PortalNeeds {
  portal: Pick<PortalService, 'createLink' | 'open'>;
}

const { adminAction, clientAction, guestAction } = actionsFor<PortalNeeds>();

const Scope = Type.Union(PORTAL_SCOPES.map((scope) => Type.Literal(scope)));
const Scopes = Type.Array(Scope, { minItems: 1, maxItems: PORTAL_SCOPES.length, uniqueItems: true });

const PortalLink = Type.Object({
  id: Type.Integer(),
  url: Type.String({ description: 'The single-use link: open it (or frame it) once, before expires_at' }),
  client_id: Type.Integer(),
  scopes: Scopes,
  return_url: Nullable(Type.String()),
  expires_at: Timestamp,
});

const PortalState = Type.Object({
  scopes: Scopes,
  return_url: Nullable(Type.String()),
  expires_at: Timestamp,
});

export const portalApi: ModuleApi<PortalNeeds> = {
  name: 'portal',
  admin: {
    session_create: adminAction({
      params: Type.Object({
        client_id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
        scopes: Type.Optional(Scopes),
        return_url: Type.Optional(Type.String({ maxLength: 2000 })),
        expires_in: Type.Optional(Type.Integer({ minimum: PORTAL_EXPIRES_IN.min, maximum: PORTAL_EXPIRES_IN.max })),
      }),
      permission: PORTAL_PERMISSION,
      // The operator's app server makes links as users click "Billing": its verifier token may, given the scope.
      verifier: true,
      summary:
        `A single-use customer-portal link for one client → {id, url, client_id, scopes, return_url, expires_at}. scopes: any of ${PORTAL_SCOPES.join(', ')} ` +
        `(default all); expires_in: seconds the link and its session live, ${PORTAL_EXPIRES_IN.min}–${PORTAL_EXPIRES_IN.max} (default ${PORTAL_EXPIRES_IN.default}); ` +
        'return_url: http(s), on the portal_frame_ancestors origins when that setting is set',
      result: PortalLink,
      handler: (params, { services, identity }) => services.portal.createLink(identity.staff.id, params),
    }),
  },
  client: {
    get: clientAction({
      params: Type.Object({}),
      summary: 'The portal session of this browser: its scopes, the "Back" address and when it ends (404 for any other session or credential)',
      result: PortalState,
      async handler(_params, { session, identity }) {
        // A token call has no session of its own; a cookie sent along with it is not the caller's portal.
        const current = identity.via === 'session' ? await session.current() : null;
        const portal = current?.portal ?? null;
        if (portal === null) throw errors.notFound('Portal session');
        return { scopes: [...portal.scopes], return_url: portal.returnUrl, expires_at: portal.endsAt };
      },
    }),
  },
  guest: {
    open: guestAction({
      // The token is a credential: never in a URL the server sees.
      postOnly: true,
      params: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }),
      summary:
        "Opens a portal link (its URL's #token=…): starts the client's portal session and sets its cookies (SameSite=None; Secure; Partitioned where the browser allows, for an iframe). A link works once, before it expires; 422 otherwise",
      result: PortalState,
      async handler({ token }, { services, session }) {
        const opened = await services.portal.open(token);
        await session.start({ type: 'client', id: opened.clientId }, opened.grant);
        return { scopes: [...opened.grant.scopes], return_url: opened.grant.returnUrl, expires_at: opened.grant.endsAt };
      },
    }),
  },
};
