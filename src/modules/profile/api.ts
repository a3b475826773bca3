// profile: the caller's own account, for staff (admin/profile/*) and clients (client/profile/*): read, update,
// password, API token, logout; two-factor login (two-factor-actions.ts) and the change of e-mail
// (email-actions.ts). Staff may also rotate a client's token (admin/profile/api_key_reset).
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { errors } from '../../platform/errors.ts';
import { Done, Nullable, Timestamp } from '../../platform/schemas.ts';
import { Id, profileParams } from '../client/params.ts';
import type { ClientService } from '../client/service.ts';
import type { PaymentService } from '../payment/service.ts';
import { StaffRecordSchema } from '../staff/results.ts';
import type { StaffService } from '../staff/service.ts';
import { clientEmailActions, staffEmailActions, type EmailChangeNeeds } from './email-actions.ts';
import { clientTwoFactorActions, staffTwoFactorActions, type TwoFactorNeeds } from './two-factor-actions.ts';
import { vatProfileClientActions, type VatClientNeeds } from '../vat/client-actions.ts';

/** The services the profile module's actions use. */
export interface ProfileNeeds extends TwoFactorNeeds, EmailChangeNeeds, VatClientNeeds {
  staff: Pick<StaffService, 'profile' | 'update' | 'verifyOwnPassword' | 'changePassword' | 'rotateApiToken'>;
  clients: Pick<ClientService, 'get' | 'update' | 'changeOwnPassword' | 'apiToken' | 'rotateApiToken' | 'verifyOwnPassword'>;
  payments: Pick<PaymentService, 'autoPay' | 'setAutoPay'>;
}

const { adminAction, clientAction } = actionsFor<ProfileNeeds>();

const NO_PARAMS = Type.Object({});
const Password = Type.String({ minLength: 1, maxLength: 256 });
const Token = Type.String({ minLength: 1 });

/** The client's own record (ClientRecord in the client service) with `auto_pay`. */
const OwnClientRecord = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  first_name: Type.String(),
  last_name: Nullable(Type.String()),
  company: Nullable(Type.String()),
  phone: Nullable(Type.String()),
  address_1: Nullable(Type.String()),
  address_2: Nullable(Type.String()),
  city: Nullable(Type.String()),
  state: Nullable(Type.String()),
  postcode: Nullable(Type.String()),
  country: Nullable(Type.String()),
  currency: Nullable(Type.String()),
  vat_number: Nullable(Type.String()),
  tax_exempt: Type.Boolean(),
  status: Type.Union([Type.Literal('active'), Type.Literal('suspended'), Type.Literal('canceled')]),
  created_at: Timestamp,
  updated_at: Timestamp,
  auto_pay: Type.Boolean(),
});

export const profileApi: ModuleApi<ProfileNeeds> = {
  name: 'profile',
  admin: {
    get: adminAction({
      params: NO_PARAMS,
      summary: "The staff member's own record, with its API token",
      result: Type.Composite([StaffRecordSchema, Type.Object({ api_token: Token })]),
      handler: (_params, { services, identity }) => services.staff.profile(identity.staff.id),
    }),
    update: adminAction({
      params: Type.Object({
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
        email: Type.Optional(Type.String({ format: 'email', maxLength: 254 })),
      }),
      summary: "Changes the caller's own name; the e-mail changes through admin/profile/change_email (422 here)",
      result: Done,
      async handler({ name, email }, { services, identity }) {
        // The address is where reset links go: changing it needs the password, a second factor and the new mailbox
        // (issue 20, M4). `email` stays declared so that sending a new one is refused loudly rather than ignored; the
        // current one is let through, since forms send every field.
        if (email !== undefined && email.toLowerCase() !== identity.staff.email) throw errors.invalid('email', 'cannot be changed here: use admin/profile/change_email {email, password, code?}');
        await services.staff.update(identity.staff.id, identity.staff.id, { name });
        return true;
      },
    }),
    change_password: adminAction({
      postOnly: true,
      params: Type.Object({ current_password: Password, password: Password, password_confirm: Password }),
      summary: "Changes the caller's own password (current_password required); the caller's other sessions end",
      result: Done,
      async handler({ current_password, password, password_confirm }, { services, identity, session }) {
        if (!(await services.staff.verifyOwnPassword(identity.staff.id, current_password))) {
          throw errors.invalid('current_password', 'is not correct');
        }
        const own = await session.current();
        await services.staff.changePassword(identity.staff.id, password, password_confirm, own?.idHash);
        return true;
      },
    }),
    generate_api_key: adminAction({
      params: NO_PARAMS,
      summary: 'Rotates the caller\'s API token and returns the new one (FOSSBilling returns true)',
      result: Token,
      handler: (_params, { services, identity }) => services.staff.rotateApiToken(identity.staff.id),
    }),
    api_key_reset: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'client.manage',
      summary: "Rotates a client's API token and returns the new one",
      result: Token,
      handler: ({ id }, { services }) => services.clients.rotateApiToken(id),
    }),
    logout: adminAction({
      params: NO_PARAMS,
      summary: "Ends the caller's admin session",
      result: Done,
      async handler(_params, { session }) {
        await session.end();
        return true;
      },
    }),
    ...staffTwoFactorActions,
    ...staffEmailActions,
  },
  client: {
    get: clientAction({
      params: NO_PARAMS,
      summary: "The client's own record, with `auto_pay` (renewals charged to the saved card)",
      result: OwnClientRecord,
      handler: async (_params, { services, identity }) => ({
        ...(await services.clients.get(identity.client.id)),
        auto_pay: await services.payments.autoPay(identity.client.id),
      }),
    }),
    update: clientAction({
      params: Type.Object({
        first_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
        ...profileParams,
        auto_pay: Type.Optional(Type.Boolean()),
      }),
      summary: "Changes the client's own profile fields and `auto_pay`",
      result: Done,
      async handler({ auto_pay, ...fields }, { services, identity }) {
        if (Object.keys(fields).length > 0) await services.clients.update(identity.client.id, fields);
        if (auto_pay !== undefined) await services.payments.setAutoPay(identity.client.id, auto_pay);
        return true;
      },
    }),
    change_password: clientAction({
      postOnly: true,
      params: Type.Object({ current_password: Password, password: Password, password_confirm: Password }),
      summary: "Changes the client's own password (current_password required); the client's other sessions end",
      result: Done,
      async handler({ current_password, password, password_confirm }, { services, identity, session }) {
        const own = await session.current();
        await services.clients.changeOwnPassword(identity.client.id, current_password, password, password_confirm, own?.idHash);
        return true;
      },
    }),
    api_key_get: clientAction({
      params: NO_PARAMS,
      summary: "The client's API token",
      result: Token,
      handler: (_params, { services, identity }) => services.clients.apiToken(identity.client.id),
    }),
    api_key_reset: clientAction({
      params: NO_PARAMS,
      summary: "Rotates the client's API token and returns the new one; the old one stops working at once",
      result: Token,
      handler: (_params, { services, identity }) => services.clients.rotateApiToken(identity.client.id),
    }),
    logout: clientAction({
      params: NO_PARAMS,
      summary: "Ends the client's session",
      result: Done,
      async handler(_params, { session }) {
        await session.end();
        return true;
      },
    }),
    ...clientTwoFactorActions,
    ...clientEmailActions,
    ...vatProfileClientActions,
  },
};
