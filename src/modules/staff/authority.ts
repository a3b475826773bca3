// What a `staff.manage` holder may do to other staff and to groups: nothing that reaches a permission it does not
// hold itself. Otherwise a member of a group holding only `staff.manage` could move itself into a stronger group,
// re-password a stronger member and log in as them, create staff in a stronger group, or write itself a group with
// every permission. The Administrators group holds every permission, so only administrators reach it.
import { errors } from '../../platform/errors.ts';
import { hasPermission, type StaffPrincipal } from '../../platform/identity.ts';
import type { StaffService } from './service.ts';

type GroupPermissions = Pick<StaffService, 'groupPermissions'>;

/** Throws 403 naming the first permission in `permissions` that `actor` lacks. */
export function requireHeld(actor: StaffPrincipal, permissions: readonly string[] | 'all'): void {
  if (actor.permissions === 'all') return;
  if (permissions === 'all') throw errors.forbidden('administrator');
  for (const permission of permissions) if (!hasPermission(actor, permission)) throw errors.forbidden(permission);
}

/**
 * Refuses unless `actor` holds every permission of each group named. An unknown group is left to the service, which
 * answers 422 (a new group) or 404 (a group being edited) as it always has.
 */
export async function requireGroupsWithin(staff: GroupPermissions, actor: StaffPrincipal, groupIds: ReadonlyArray<number | undefined>): Promise<void> {
  if (actor.permissions === 'all') return;
  for (const id of groupIds) {
    if (id === undefined) continue;
    const permissions = await staff.groupPermissions(id);
    if (permissions !== null) requireHeld(actor, permissions);
  }
}

/** For an action on another staff member: their current group, and the group they would move to, are within reach. */
export async function requireStaffWithin(
  staff: GroupPermissions & Pick<StaffService, 'get'>,
  actor: StaffPrincipal,
  targetId: number,
  newGroupId?: number,
): Promise<void> {
  if (actor.permissions === 'all') return;
  const target = await staff.get(targetId);
  await requireGroupsWithin(staff, actor, [target.admin_group_id, newGroupId]);
}
