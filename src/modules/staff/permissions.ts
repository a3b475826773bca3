// The catalogue of staff permissions: every `module.group` some admin action asks for, with the actions it opens.
// Derived rather than written down, so a new action's permission appears in the staff panel's checkboxes without
// anyone remembering to list it. The registry (src/modules/index.ts) derives it from every module it serves and
// hands it to the staff module's actions.
import { Type } from '@sinclair/typebox';
import type { ModuleApi } from '../../platform/action.ts';

export interface PermissionEntry {
  permission: string;
  module: string;
  /** The admin actions (`module/action`) that need it, sorted. */
  actions: string[];
}

/** Every permission the given modules' admin actions declare, sorted by permission. */
export function permissionCatalogue(modules: readonly ModuleApi[]): PermissionEntry[] {
  const byPermission = new Map<string, string[]>();
  for (const module of modules) {
    for (const [action, def] of Object.entries(module.admin ?? {})) {
      if (def.permission === undefined) continue;
      const actions = byPermission.get(def.permission) ?? [];
      actions.push(`${module.name}/${action}`);
      byPermission.set(def.permission, actions);
    }
  }
  return [...byPermission.entries()]
    .map(([permission, actions]) => ({ permission, module: permission.split('.')[0] ?? permission, actions: actions.toSorted() }))
    .toSorted((a, b) => a.permission.localeCompare(b.permission));
}

export const PermissionList = Type.Array(
  Type.Object({ permission: Type.String(), module: Type.String(), actions: Type.Array(Type.String()) }),
);
