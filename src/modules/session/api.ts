// session: what the browser's session cookie stands for, asked by the pages on load. A guest call that always
// answers 200, so a logged-out visitor's console shows no 401 from the pages probing for a login; the pages call
// client/profile/get or admin/profile/get only when this says there is one. It names the role only: reading the
// account itself still needs the role's call with its CSRF token.
import { Type } from '@sinclair/typebox';
import { guestAction, type ModuleApi } from '../../platform/action.ts';

export const sessionApi: ModuleApi = {
  name: 'session',
  guest: {
    whoami: guestAction({
      params: Type.Object({}),
      summary: "Who the session cookie belongs to: 'client', 'admin', or 'guest' (no session, or a guest cart's)",
      result: Type.Object({ role: Type.Union([Type.Literal('guest'), Type.Literal('client'), Type.Literal('admin')]) }),
      async handler(_params, { session }) {
        const current = await session.current();
        return { role: current === null ? 'guest' : current.subject.type };
      },
    }),
  },
};
