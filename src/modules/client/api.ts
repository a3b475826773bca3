// client: sign-up and login for customers, and staff management of client accounts.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { failLogin, guardLogin, type LimiterHolder } from '../../platform/login-limits.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { Done, PageOf } from '../../platform/schemas.ts';
import { requireSecondFactor, SecondFactorCode } from '../account/login.ts';
import { Id, profileParams } from './params.ts';
import { clientRecoveryActions, type ClientRecoveryNeeds } from './recovery-actions.ts';
import { Client, LoginResult } from './results.ts';
import type { ClientService } from './service.ts';
import type { TwoFactorService } from '../account/two-factor.ts';
import { balanceAdminActions, balanceClientActions, type BalanceNeeds } from '../credit/balance-actions.ts';
import { vatClientAdminActions, type VatClientNeeds } from '../vat/client-actions.ts';

/** The services the client module's actions use. */
export interface ClientNeeds extends LimiterHolder, ClientRecoveryNeeds, BalanceNeeds, VatClientNeeds {
  clients: Pick<ClientService, 'create' | 'login' | 'loggedIn' | 'list' | 'get' | 'update' | 'delete' | 'changePassword'>;
  twoFactor: Pick<TwoFactorService, 'isEnabled' | 'verify'>;
}

const { adminAction, guestAction } = actionsFor<ClientNeeds>();

const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 1, maxLength: 256 });
const Text = Type.String({ maxLength: 255 });
const Status = Type.Union([Type.Literal('active'), Type.Literal('suspended'), Type.Literal('canceled')]);

const FirstName = Type.String({ minLength: 1, maxLength: 255 });

export const clientApi: ModuleApi<ClientNeeds> = {
  name: 'client',
  guest: {
    create: guestAction({
      postOnly: true,
      params: Type.Object({ email: Email, first_name: FirstName, password: Password, password_confirm: Password, ...profileParams }),
      rateLimit: 'SIGNUP',
      summary: 'Sign up: creates an active client and starts its session',
      result: Type.Integer({ description: 'The new client id' }),
      async handler(params, { services, session }) {
        const id = await services.clients.create(params, { signup: true });
        const previous = await session.current();
        await session.start({ type: 'client', id });
        await services.clients.loggedIn(id, previous?.idHash ?? null);
        return id;
      },
    }),
    login: guestAction({
      postOnly: true,
      params: Type.Object({ email: Type.String({ maxLength: 254 }), password: Type.String({ maxLength: 256 }), code: Type.Optional(SecondFactorCode) }),
      // LOGIN is counted per (address, e-mail) inside guardLogin (a wrong two-factor code is another call, so it
      // counts too); the call itself counts under API_GUEST per address.
      summary: 'Client login: starts a client session and sets the session and csrf_token cookies; `code` when two-factor login is on',
      result: LoginResult('client'),
      async handler({ email, password, code }, { services, reply, ip, session }) {
        await guardLogin(services, reply, ip, email);
        const client = await services.clients.login(email, password);
        if (client === null) return failLogin(services, reply, ip);
        await requireSecondFactor(services, reply, ip, { type: 'client', id: client.id }, code);
        const previous = await session.current();
        await session.start({ type: 'client', id: client.id });
        await services.clients.loggedIn(client.id, previous?.idHash ?? null);
        return { id: client.id, email: client.email, name: client.name, role: 'client' };
      },
    }),
    ...clientRecoveryActions,
  },
  admin: {
    create: adminAction({
      postOnly: true,
      params: Type.Object({
        email: Email,
        first_name: FirstName,
        password: Type.Optional(Password),
        status: Type.Optional(Status),
        tax_exempt: Type.Optional(Type.Boolean()),
        ...profileParams,
      }),
      permission: 'client.manage',
      summary: 'Creates a client account (active unless `status` says otherwise); without a password the client cannot log in until it sets one',
      result: Type.Integer({ description: 'The new client id' }),
      handler: (params, { services }) => services.clients.create(params),
    }),
    get_list: adminAction({
      params: Type.Object({
        search: Type.Optional(Text),
        status: Type.Optional(Status),
        email: Type.Optional(Text),
        name: Type.Optional(Text),
        company: Type.Optional(Text),
        date_from: Type.Optional(Type.String({ format: 'date' })),
        date_to: Type.Optional(Type.String({ format: 'date' })),
        ...paginationParams,
      }),
      permission: 'client.view',
      summary: 'Lists clients, newest first; `search` matches e-mail, name and company, the other filters one field each',
      result: PageOf(Client),
      handler: (params, { services }) => services.clients.list(params),
    }),
    get: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'client.view',
      summary: 'One client account',
      result: Client,
      handler: ({ id }, { services }) => services.clients.get(id),
    }),
    update: adminAction({
      params: Type.Object({
        id: Id,
        email: Type.Optional(Email),
        first_name: Type.Optional(FirstName),
        status: Type.Optional(Status),
        tax_exempt: Type.Optional(Type.Boolean()),
        ...profileParams,
      }),
      permission: 'client.manage',
      summary: "Changes a client's e-mail, profile, status or tax exemption; a blank optional field is cleared",
      result: Done,
      async handler({ id, ...fields }, { services }) {
        await services.clients.update(id, fields);
        return true;
      },
    }),
    delete: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'client.manage',
      summary: 'Deletes a client account and ends its sessions',
      result: Done,
      async handler({ id }, { services }) {
        await services.clients.delete(id);
        return true;
      },
    }),
    change_password: adminAction({
      postOnly: true,
      params: Type.Object({ id: Id, password: Password, password_confirm: Password }),
      permission: 'client.manage',
      summary: "Sets a client's password; ends every session of the client",
      result: Done,
      async handler({ id, password, password_confirm }, { services }) {
        await services.clients.changePassword(id, password, password_confirm);
        return true;
      },
    }),
    ...balanceAdminActions,
    ...vatClientAdminActions,
  },
  client: balanceClientActions,
};
