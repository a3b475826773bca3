// staff: staff login and password reset, staff members, admin groups and verifier tokens.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { errors } from '../../platform/errors.ts';
import { failLogin, guardLogin, type LimiterHolder } from '../../platform/login-limits.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { requireGroupsWithin, requireHeld, requireStaffWithin } from './authority.ts';
import { requireSecondFactor, SecondFactorCode } from '../account/login.ts';
import type { TwoFactorService } from '../account/two-factor.ts';
import { PermissionList, type PermissionEntry } from './permissions.ts';
import { Done, PageOf, Timestamp } from '../../platform/schemas.ts';
import { VERIFIER_PERMISSION } from '../../platform/permissions.ts';
import { VERIFIER_SCOPES, type VerifierScope } from './verifier-groups.ts';
import { staffRecoveryActions, type StaffRecoveryNeeds } from './recovery-actions.ts';
import { AdminGroupSchema, StaffRecordSchema, StaffStatusSchema } from './results.ts';
import type { StaffService } from './service.ts';

/** The services the staff module's actions use. */
export interface StaffNeeds extends LimiterHolder, StaffRecoveryNeeds {
  staff: Pick<
    StaffService,
    | 'login' | 'create' | 'list' | 'get' | 'update' | 'delete' | 'changePassword' | 'groupPermissions'
    | 'groups' | 'createGroup' | 'updateGroup' | 'deleteGroup' | 'createVerifier' | 'verifiers' | 'rotateVerifier' | 'revokeVerifier'
  >;
  twoFactor: Pick<TwoFactorService, 'isEnabled' | 'verify'>;
}

const { adminAction, guestAction } = actionsFor<StaffNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Email = Type.String({ format: 'email', maxLength: 254 });
const Name = Type.String({ minLength: 1, maxLength: 255 });
const Password = Type.String({ minLength: 1, maxLength: 256 });
const Status = Type.Union([Type.Literal('active'), Type.Literal('inactive')]);
const Token = Type.String({ minLength: 1 });
const VerifierScopes = Type.Array(Type.Union((Object.keys(VERIFIER_SCOPES) as VerifierScope[]).map((scope) => Type.Literal(scope))), { uniqueItems: true });
const Verifier = Type.Object({ id: Type.Integer(), name: Type.String(), scopes: VerifierScopes, status: StaffStatusSchema, created_at: Timestamp, updated_at: Timestamp });
const Permissions = Type.Array(Type.String({ pattern: '^[a-z_]+\\.[a-z_]+$', maxLength: 100 }), { maxItems: 200 });

/**
 * The staff module's actions. `catalogue` lists every permission the served modules' admin actions ask for: the
 * registry (src/modules/index.ts) computes it from all of them, this module among them, and hands it in, so no
 * module reads the registry.
 *
 * `staff.manage` lets a group manage staff and groups only within the permissions it holds itself (authority.ts):
 * whatever reaches a stronger group — creating, moving, editing, deleting or re-passwording one of its members, or
 * writing a group — is refused with 403.
 */
export const staffApi = (catalogue: () => readonly PermissionEntry[]): ModuleApi<StaffNeeds> => ({
  name: 'staff',
  guest: {
    login: guestAction({
      postOnly: true,
      audit: 'login',
      params: Type.Object({ email: Type.String({ maxLength: 254 }), password: Type.String({ maxLength: 256 }), code: Type.Optional(SecondFactorCode) }),
      // LOGIN is counted per (address, e-mail) inside guardLogin (a wrong two-factor code is another call, so it
      // counts too); the call itself counts under API_GUEST per address.
      summary: 'Staff login: starts an admin session and sets the session and csrf_token cookies; `code` when two-factor login is on',
      result: Type.Object({ id: Type.Integer(), email: Type.String(), name: Type.String(), role: Type.Literal('admin') }),
      async handler({ email, password, code }, { services, reply, ip, session }) {
        await guardLogin(services, reply, ip, email);
        const staff = await services.staff.login(email, password);
        if (staff === null) return failLogin(services, reply, ip);
        await requireSecondFactor(services, reply, ip, { type: 'admin', id: staff.id }, code);
        await session.start({ type: 'admin', id: staff.id });
        return { id: staff.id, email: staff.email, name: staff.name, role: 'admin' };
      },
    }),
    ...staffRecoveryActions,
  },
  admin: {
    create: adminAction({
      postOnly: true,
      params: Type.Object({ email: Email, password: Password, name: Name, admin_group_id: Id, status: Type.Optional(Status) }),
      permission: 'staff.manage',
      summary: 'Adds a staff member to a group within your own permissions → new id; duplicate e-mail → 409',
      result: Type.Integer(),
      async handler(params, { services, identity }) {
        await requireGroupsWithin(services.staff, identity.staff, [params.admin_group_id]);
        return (await services.staff.create(params)).id;
      },
    }),
    get_list: adminAction({
      params: Type.Object({ search: Type.Optional(Type.String({ maxLength: 255 })), status: Type.Optional(Status), ...paginationParams }),
      permission: 'staff.manage',
      summary: 'Staff members, oldest first; search matches e-mail or name',
      result: PageOf(StaffRecordSchema),
      handler: (params, { services }) => services.staff.list(params),
    }),
    get: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'staff.manage',
      summary: 'One staff member (never the password or the API token)',
      result: StaffRecordSchema,
      handler: ({ id }, { services }) => services.staff.get(id),
    }),
    update: adminAction({
      params: Type.Object({
        id: Id,
        email: Type.Optional(Email),
        name: Type.Optional(Name),
        status: Type.Optional(Status),
        admin_group_id: Type.Optional(Id),
      }),
      permission: 'staff.manage',
      summary: 'Changes a staff member; deactivating yourself or the last active administrator → 409',
      result: Done,
      async handler({ id, ...fields }, { services, identity }) {
        // One's own address changes only with the password, a second factor and the new mailbox (issue 20, M4). The
        // same address is let through: the panel's edit form sends every field.
        if (id === identity.staff.id && fields.email !== undefined && fields.email.toLowerCase() !== identity.staff.email) {
          throw errors.invalid('email', 'of your own account changes through admin/profile/change_email {email, password, code?}');
        }
        await requireStaffWithin(services.staff, identity.staff, id, fields.admin_group_id);
        await services.staff.update(identity.staff.id, id, fields);
        return true;
      },
    }),
    delete: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'staff.manage',
      summary: 'Deletes a staff member and ends their sessions; yourself or the last active administrator → 409',
      result: Done,
      async handler({ id }, { services, identity }) {
        await requireStaffWithin(services.staff, identity.staff, id);
        await services.staff.delete(identity.staff.id, id);
        return true;
      },
    }),
    change_password: adminAction({
      postOnly: true,
      params: Type.Object({ id: Id, password: Password, password_confirm: Password }),
      permission: 'staff.manage',
      summary: "Sets a staff member's password and ends their other sessions",
      result: Done,
      async handler({ id, password, password_confirm }, { services, identity }) {
        await requireStaffWithin(services.staff, identity.staff, id);
        await services.staff.changePassword(id, password, password_confirm);
        return true;
      },
    }),
    permission_get_list: adminAction({
      params: Type.Object({}),
      permission: 'staff.manage',
      summary: 'Every staff permission the admin actions ask for (module.group), with the actions each one opens',
      result: PermissionList,
      handler: () => catalogue(),
    }),
    group_get_list: adminAction({
      params: Type.Object({ ...paginationParams }),
      permission: 'staff.manage',
      summary: 'Admin groups with their permissions (Administrators, id 1, holds every permission)',
      result: PageOf(AdminGroupSchema),
      handler: (params, { services }) => services.staff.groups(params),
    }),
    group_create: adminAction({
      params: Type.Object({ name: Name, permissions: Type.Optional(Permissions) }),
      permission: 'staff.manage',
      summary: 'A new admin group granting permissions you hold yourself → its id',
      result: Type.Integer(),
      handler({ name, permissions }, { services, identity }) {
        requireHeld(identity.staff, permissions ?? []);
        return services.staff.createGroup(name, permissions ?? []);
      },
    }),
    group_update: adminAction({
      params: Type.Object({ id: Id, name: Type.Optional(Name), permissions: Type.Optional(Permissions) }),
      permission: 'staff.manage',
      summary: "Renames a group or replaces its permissions (the Administrators group's permissions → 409)",
      result: Done,
      async handler({ id, ...fields }, { services, identity }) {
        // Both what the group grants now and what it would grant: a weaker member may not edit a stronger group.
        await requireGroupsWithin(services.staff, identity.staff, [id]);
        requireHeld(identity.staff, fields.permissions ?? []);
        await services.staff.updateGroup(id, fields);
        return true;
      },
    }),
    group_delete: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'staff.manage',
      summary: 'Deletes a group without members (Administrators, or a group with members → 409)',
      result: Done,
      async handler({ id }, { services, identity }) {
        await requireGroupsWithin(services.staff, identity.staff, [id]);
        await services.staff.deleteGroup(id);
        return true;
      },
    }),
    // Verifier tokens (CONTRACT §11): credentials for the operator's app servers, made from the Developers page.
    // Making one grants `serviceapikey.check`, so the caller must hold it (administrators hold everything).
    verifier_create: adminAction({
      params: Type.Object({ name: Name, scopes: Type.Optional(VerifierScopes) }),
      permission: 'staff.manage',
      summary:
        'A new verifier token (permission serviceapikey.check only; with scopes ["portal"] also portal.session, to make customer-portal links) → {id, name, scopes, token}; the token is shown here and by verifier_rotate only',
      result: Type.Object({ id: Type.Integer(), name: Type.String(), scopes: VerifierScopes, token: Token }),
      handler({ name, scopes = [] }, { services, identity }) {
        // Granting goes no further than the caller's own permissions.
        requireHeld(identity.staff, [VERIFIER_PERMISSION, ...scopes.map((scope) => VERIFIER_SCOPES[scope])]);
        return services.staff.createVerifier(name, scopes);
      },
    }),
    verifier_get_list: adminAction({
      params: Type.Object({ ...paginationParams }),
      permission: 'staff.manage',
      summary: 'Verifier tokens, newest first (without the tokens)',
      result: PageOf(Verifier),
      handler: (params, { services }) => services.staff.verifiers(params),
    }),
    verifier_rotate: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'staff.manage',
      summary: 'A new token for a verifier → {token}; the old one stops working at once',
      result: Type.Object({ token: Token }),
      handler({ id }, { services, identity }) {
        requireHeld(identity.staff, [VERIFIER_PERMISSION]);
        return services.staff.rotateVerifier(id);
      },
    }),
    verifier_revoke: adminAction({
      params: Type.Object({ id: Id }),
      permission: 'staff.manage',
      summary: 'Deletes a verifier: its token stops working at once',
      result: Done,
      async handler({ id }, { services, identity }) {
        requireHeld(identity.staff, [VERIFIER_PERMISSION]);
        await services.staff.revokeVerifier(id);
        return true;
      },
    }),
  },
});
