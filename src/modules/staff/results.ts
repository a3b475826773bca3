// Result schemas of the staff records (CONTRACT §6, §11): what staff/* and admin/profile/* answer. Kept beside the
// service's StaffRecord and AdminGroupRecord, which they describe field for field.
import { Type } from '@sinclair/typebox';
import { Timestamp } from '../../platform/schemas.ts';

export const StaffStatusSchema = Type.Union([Type.Literal('active'), Type.Literal('inactive')]);

/** A staff member: never the password or the API token. */
export const StaffRecordSchema = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  name: Type.String(),
  status: StaffStatusSchema,
  admin_group_id: Type.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const AdminGroupSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  permissions: Type.Array(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
