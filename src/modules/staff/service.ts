// Staff members, admin groups and the admin's own profile. The only writer of `staff` and `admin_groups`.
import { randomBytes } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { containsPattern, likeEscaped } from '../../db/like.ts';
import type { StaffTable } from './tables.ts';
import { errors } from '../../platform/errors.ts';
import type { StaffPrincipal } from '../../platform/identity.ts';
import { newApiToken, type SecretBox } from '../../lib/crypto.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { hashPassword, passwordProblem, verifyPassword } from '../../lib/passwords.ts';
import { nowIso } from '../../lib/time.ts';
import type { SessionService } from '../session/service.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { VERIFIER_PERMISSION } from '../../platform/permissions.ts';
import { grantsOnlyVerification, scopesOf, VERIFIER_SCOPES, type VerifierScope } from './verifier-groups.ts';
import type { EventBus } from '../../platform/events.ts';
import './events.ts';
import { staffEmailChanges } from './own-email.ts';

export const ADMINISTRATORS_GROUP_ID = 1;

export type StaffStatus = 'active' | 'inactive';

export interface StaffRecord {
  id: number;
  email: string;
  name: string;
  status: StaffStatus;
  admin_group_id: number;
  created_at: string;
  updated_at: string;
}

export interface AdminGroupRecord {
  id: number;
  name: string;
  permissions: string[];
  created_at: string;
  updated_at: string;
}

/** A verifier token's holder (CONTRACT §11): a staff member whose group grants only `serviceapikey.check` (and its scopes). */
export interface VerifierRecord {
  id: number;
  name: string;
  scopes: VerifierScope[];
  status: StaffStatus;
  created_at: string;
  updated_at: string;
}

/** The group verifier tokens are made in when none exists yet. */
export const VERIFIERS_GROUP_NAME = 'Verifiers';

export interface StaffServiceDeps {
  db: Kysely<Database>;
  secrets: SecretBox;
  sessions: Pick<SessionService, 'destroyAllOf'>;
  events: EventBus;
}

function toRecord(row: Selectable<StaffTable>): StaffRecord {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    status: row.status,
    admin_group_id: row.admin_group_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function parsePermissions(json: string): string[] {
  const parsed: unknown = JSON.parse(json);
  return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === 'string') : [];
}

function checkPassword(password: string, param = 'password'): void {
  const problem = passwordProblem(password);
  if (problem !== null) throw errors.invalid(param, problem);
}

export function createStaffService({ db, secrets, sessions, events }: StaffServiceDeps) {
  async function principalOf(row: Selectable<StaffTable> | undefined): Promise<StaffPrincipal | null> {
    if (row === undefined || row.status !== 'active') return null;
    let permissions: StaffPrincipal['permissions'] = 'all';
    let verifier = false;
    if (row.admin_group_id !== ADMINISTRATORS_GROUP_ID) {
      const group = await db.selectFrom('admin_groups').select('permissions').where('id', '=', row.admin_group_id).executeTakeFirst();
      const list = group === undefined ? [] : parsePermissions(group.permissions);
      permissions = new Set(list);
      verifier = grantsOnlyVerification(row.admin_group_id, list);
    }
    return { id: row.id, email: row.email, name: row.name, adminGroupId: row.admin_group_id, permissions, verifier };
  }

  /** Whether the staff row is a verifier credential: it never logs in, gets no reset mail and sets no password. */
  async function isVerifier(adminGroupId: number, trx: Kysely<Database> = db): Promise<boolean> {
    const group = await trx.selectFrom('admin_groups').select('permissions').where('id', '=', adminGroupId).executeTakeFirst();
    return group !== undefined && grantsOnlyVerification(adminGroupId, parsePermissions(group.permissions));
  }

  async function requireStaff(id: number, trx: Kysely<Database> = db): Promise<Selectable<StaffTable>> {
    const row = await trx.selectFrom('staff').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Staff member');
    return row;
  }

  async function requireGroup(id: number, trx: Kysely<Database> = db): Promise<void> {
    const group = await trx.selectFrom('admin_groups').select('id').where('id', '=', id).executeTakeFirst();
    if (group === undefined) throw errors.invalid('admin_group_id', `names no admin group (${id})`);
  }

  async function emailTaken(email: string, exceptId?: number, trx: Kysely<Database> = db): Promise<boolean> {
    let query = trx.selectFrom('staff').select('id').where('email', '=', email.toLowerCase());
    if (exceptId !== undefined) query = query.where('id', '!=', exceptId);
    return (await query.executeTakeFirst()) !== undefined;
  }

  /** Refuses a change that would leave no active member in the Administrators group. */
  async function guardLastAdministrator(trx: Kysely<Database>, staffId: number): Promise<void> {
    // Touching the group's row locks it until the transaction ends (PostgreSQL; SQLite runs one transaction at a
    // time), so two administrators deactivating each other at once are counted one after the other.
    await trx
      .updateTable('admin_groups')
      .set((eb) => ({ name: eb.ref('name') }))
      .where('id', '=', ADMINISTRATORS_GROUP_ID)
      .execute();
    const others = await trx
      .selectFrom('staff')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('admin_group_id', '=', ADMINISTRATORS_GROUP_ID)
      .where('status', '=', 'active')
      .where('id', '!=', staffId)
      .executeTakeFirstOrThrow();
    if (others.n === 0) throw errors.conflict('This is the last active administrator');
  }

  const isVerifierGroup = (group: { id: number; permissions: string }): boolean => grantsOnlyVerification(group.id, parsePermissions(group.permissions));

  /** Groups granting `serviceapikey.check` and verifier scopes only, with their scopes: their members are verifiers. */
  async function verifierGroups(trx: Kysely<Database> = db): Promise<Array<{ id: number; scopes: VerifierScope[] }>> {
    const groups = await trx.selectFrom('admin_groups').select(['id', 'permissions']).orderBy('id').execute();
    return groups.filter(isVerifierGroup).map((group) => ({ id: group.id, scopes: scopesOf(parsePermissions(group.permissions)) }));
  }

  async function verifierGroupIds(trx: Kysely<Database> = db): Promise<number[]> {
    return (await verifierGroups(trx)).map((group) => group.id);
  }

  /** The verifier `id`; 404 for any other staff member, so these actions never reach a person's account. */
  async function requireVerifier(id: number, trx: Kysely<Database> = db): Promise<Selectable<StaffTable>> {
    const groups = await verifierGroupIds(trx);
    const row = await trx.selectFrom('staff').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined || !groups.includes(row.admin_group_id)) throw errors.notFound('Verifier token');
    return row;
  }

  const service = {
    ...staffEmailChanges(db, events),
    principalByToken(token: string): Promise<StaffPrincipal | null> {
      return db
        .selectFrom('staff')
        .selectAll()
        .where('api_token_hash', '=', secrets.hash(token))
        .executeTakeFirst()
        .then(principalOf);
    },

    async principalById(id: number): Promise<StaffPrincipal | null> {
      return principalOf(await db.selectFrom('staff').selectAll().where('id', '=', id).executeTakeFirst());
    },

    /**
     * The active staff member with these credentials, or null; takes the same time whether the e-mail exists. A
     * verifier never logs in, whatever its password (M3): it exists for its token alone.
     */
    async login(email: string, password: string): Promise<StaffPrincipal | null> {
      const row = await db.selectFrom('staff').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
      const ok = await verifyPassword(row?.password_hash ?? null, password);
      const principal = ok ? await principalOf(row) : null;
      return principal?.verifier === true ? null : principal;
    },

    async count(): Promise<number> {
      const row = await db.selectFrom('staff').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      return row.n;
    },

    async create(input: {
      email: string;
      password: string;
      name: string;
      admin_group_id: number;
      status?: StaffStatus | undefined;
      apiToken?: string | undefined;
    }): Promise<{ id: number; apiToken: string }> {
      checkPassword(input.password);
      await requireGroup(input.admin_group_id);
      if (await emailTaken(input.email)) throw errors.conflict('A staff member with this e-mail already exists');
      const apiToken = input.apiToken ?? newApiToken();
      const now = nowIso();
      const row = await db
        .insertInto('staff')
        .values({
          email: input.email.toLowerCase(),
          name: input.name,
          password_hash: await hashPassword(input.password),
          status: input.status ?? 'active',
          admin_group_id: input.admin_group_id,
          api_token_hash: secrets.hash(apiToken),
          api_token_enc: secrets.encrypt(apiToken),
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
        .catch((error: unknown) => {
          if (isUniqueViolation(error)) throw errors.conflict('A staff member with this e-mail already exists');
          throw error;
        });
      return { id: row.id, apiToken };
    },

    async list(params: { search?: string | undefined; status?: StaffStatus | undefined; page?: number | undefined; per_page?: number | undefined }): Promise<Page<StaffRecord>> {
      const request = pageRequest(params);
      let query = db.selectFrom('staff');
      if (params.status !== undefined) query = query.where('status', '=', params.status);
      if (params.search !== undefined && params.search !== '') {
        // `%` and `_` typed by staff are literal characters, not wildcards.
        const pattern = containsPattern(params.search.toLowerCase());
        query = query.where((eb) => eb.or([likeEscaped(eb.ref('email'), pattern), likeEscaped(eb.fn<string>('lower', ['name']), pattern)]));
      }
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.selectAll().orderBy('id', 'asc').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, rows.map(toRecord));
    },

    async get(id: number): Promise<StaffRecord> {
      return toRecord(await requireStaff(id));
    },

    async update(
      actorId: number,
      id: number,
      fields: { email?: string | undefined; name?: string | undefined; status?: StaffStatus | undefined; admin_group_id?: number | undefined },
    ): Promise<void> {
      await inTransaction(db, async (trx) => {
        const row = await requireStaff(id, trx);
        if (fields.email !== undefined && (await emailTaken(fields.email, id, trx))) {
          throw errors.conflict('A staff member with this e-mail already exists');
        }
        if (fields.admin_group_id !== undefined) await requireGroup(fields.admin_group_id, trx);
        const deactivating = fields.status === 'inactive' && row.status === 'active';
        const leavingAdmins =
          fields.admin_group_id !== undefined &&
          fields.admin_group_id !== ADMINISTRATORS_GROUP_ID &&
          row.admin_group_id === ADMINISTRATORS_GROUP_ID;
        if (deactivating && id === actorId) throw errors.conflict('You cannot deactivate yourself');
        if ((deactivating || leavingAdmins) && row.admin_group_id === ADMINISTRATORS_GROUP_ID && row.status === 'active') {
          await guardLastAdministrator(trx, id);
        }
        await trx
          .updateTable('staff')
          .set({
            ...(fields.email !== undefined && { email: fields.email.toLowerCase() }),
            ...(fields.name !== undefined && { name: fields.name }),
            ...(fields.status !== undefined && { status: fields.status }),
            ...(fields.admin_group_id !== undefined && { admin_group_id: fields.admin_group_id }),
            updated_at: nowIso(),
          })
          .where('id', '=', id)
          .execute()
          .catch((error: unknown) => {
            if (isUniqueViolation(error)) throw errors.conflict('A staff member with this e-mail already exists');
            throw error;
          });
        if (deactivating) await sessions.destroyAllOf('admin', id, trx);
        if (fields.email !== undefined && fields.email.toLowerCase() !== row.email) await events.emit('staff.credentials_changed', { staffId: id, reason: 'email' }, trx);
      });
    },

    async delete(actorId: number, id: number): Promise<void> {
      if (id === actorId) throw errors.conflict('You cannot delete yourself');
      await inTransaction(db, async (trx) => {
        const row = await requireStaff(id, trx);
        if (row.admin_group_id === ADMINISTRATORS_GROUP_ID && row.status === 'active') await guardLastAdministrator(trx, id);
        await sessions.destroyAllOf('admin', id, trx);
        await trx.deleteFrom('staff').where('id', '=', id).execute();
      });
    },

    /** Sets a new password and ends the member's other sessions (all but `keepSessionIdHash`, the caller's own). */
    async changePassword(id: number, password: string, confirm: string, keepSessionIdHash?: string): Promise<void> {
      if (password !== confirm) throw errors.invalid('password_confirm', 'does not match password');
      checkPassword(password);
      await requireStaff(id);
      const passwordHash = await hashPassword(password);
      await inTransaction(db, async (trx) => {
        await trx.updateTable('staff').set({ password_hash: passwordHash, updated_at: nowIso() }).where('id', '=', id).execute();
        await sessions.destroyAllOf('admin', id, trx, keepSessionIdHash);
        await events.emit('staff.credentials_changed', { staffId: id, reason: 'password' }, trx);
      });
    },

    async profile(id: number): Promise<StaffRecord & { api_token: string }> {
      const row = await requireStaff(id);
      return { ...toRecord(row), api_token: secrets.decrypt(row.api_token_enc) };
    },

    async rotateApiToken(id: number): Promise<string> {
      await requireStaff(id);
      const token = newApiToken();
      await db
        .updateTable('staff')
        .set({ api_token_hash: secrets.hash(token), api_token_enc: secrets.encrypt(token), updated_at: nowIso() })
        .where('id', '=', id)
        .execute();
      return token;
    },

    /** The staff member behind an address, for password reset; null when there is none. A verifier counts as inactive. */
    async findByEmail(email: string): Promise<{ id: number; email: string; name: string; active: boolean } | null> {
      const row = await db.selectFrom('staff').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
      if (row === undefined) return null;
      return { id: row.id, email: row.email, name: row.name, active: row.status === 'active' && !(await isVerifier(row.admin_group_id)) };
    },

    /** Password reset inside the caller's transaction: new hash, every session ended. False when not active, or a verifier. */
    async resetPassword(trx: Kysely<Database>, id: number, passwordHash: string): Promise<boolean> {
      const target = await trx.selectFrom('staff').select('admin_group_id').where('id', '=', id).executeTakeFirst();
      if (target === undefined || (await isVerifier(target.admin_group_id, trx))) return false;
      const result = await trx
        .updateTable('staff')
        .set({ password_hash: passwordHash, updated_at: nowIso() })
        .where('id', '=', id)
        .where('status', '=', 'active')
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await sessions.destroyAllOf('admin', id, trx);
      return true;
    },

    async verifyOwnPassword(id: number, password: string): Promise<boolean> {
      const row = await requireStaff(id);
      return verifyPassword(row.password_hash, password);
    },

    // --- verifier tokens (CONTRACT §11) ---------------------------------------------------------------------------
    // A verifier is a staff member of a group that grants only `serviceapikey.check`, made without a usable password
    // (nobody knows it) and with an address that cannot receive mail: it exists for its API token alone.

    /**
     * A new verifier in the verifier group of exactly these scopes (created on first use: "Verifiers", or
     * "Verifiers (portal)"); its token is returned here only.
     */
    async createVerifier(name: string, scopes: readonly VerifierScope[] = []): Promise<{ id: number; name: string; scopes: VerifierScope[]; token: string }> {
      const wanted = scopesOf(scopes.map((scope) => VERIFIER_SCOPES[scope]));
      const groupName = wanted.length === 0 ? VERIFIERS_GROUP_NAME : `${VERIFIERS_GROUP_NAME} (${wanted.join(', ')})`;
      const token = newApiToken();
      // A password nobody holds: argon2id of 32 random bytes that are then forgotten.
      const passwordHash = await hashPassword(randomBytes(32).toString('base64'));
      const now = nowIso();
      const id = await inTransaction(db, async (trx) => {
        const groups = await verifierGroups(trx);
        const groupId =
          groups.find((group) => group.scopes.join() === wanted.join())?.id ??
          (
            await trx
              .insertInto('admin_groups')
              .values({ name: groupName, permissions: JSON.stringify([VERIFIER_PERMISSION, ...wanted.map((scope) => VERIFIER_SCOPES[scope])]), created_at: now, updated_at: now })
              .returning('id')
              .executeTakeFirstOrThrow()
          ).id;
        const row = await trx
          .insertInto('staff')
          .values({
            email: `verifier-${randomBytes(8).toString('hex')}@verifiers.invalid`,
            name,
            password_hash: passwordHash,
            status: 'active',
            admin_group_id: groupId,
            api_token_hash: secrets.hash(token),
            api_token_enc: secrets.encrypt(token),
            created_at: now,
            updated_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        return row.id;
      });
      return { id, name, scopes: wanted, token };
    },

    async verifiers(params: { page?: number | undefined; per_page?: number | undefined }): Promise<Page<VerifierRecord>> {
      const request = pageRequest(params);
      const groups = await verifierGroups();
      if (groups.length === 0) return toPage(request, 0, []);
      const query = db.selectFrom('staff').where('admin_group_id', 'in', groups.map((group) => group.id));
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.select(['id', 'name', 'admin_group_id', 'status', 'created_at', 'updated_at']).orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      const scopesOfGroup = (id: number): VerifierScope[] => groups.find((group) => group.id === id)?.scopes ?? [];
      return toPage(request, total.n, rows.map(({ admin_group_id, ...row }) => ({ ...row, scopes: scopesOfGroup(admin_group_id) })));
    },

    /** A new token for the verifier; the old one stops working at once. */
    async rotateVerifier(id: number): Promise<{ token: string }> {
      const token = newApiToken();
      await inTransaction(db, async (trx) => {
        await requireVerifier(id, trx);
        await trx
          .updateTable('staff')
          .set({ api_token_hash: secrets.hash(token), api_token_enc: secrets.encrypt(token), updated_at: nowIso() })
          .where('id', '=', id)
          .execute();
        // Whatever was derived from the old token ends with it: sessions and links (M3).
        await sessions.destroyAllOf('admin', id, trx);
        await events.emit('staff.credentials_changed', { staffId: id, reason: 'verifier_rotated' }, trx);
      });
      return { token };
    },

    /** Deletes the verifier: its token stops working at once. */
    async revokeVerifier(id: number): Promise<void> {
      await inTransaction(db, async (trx) => {
        await requireVerifier(id, trx);
        await sessions.destroyAllOf('admin', id, trx);
        await events.emit('staff.credentials_changed', { staffId: id, reason: 'verifier_revoked' }, trx);
        const result = await trx.deleteFrom('staff').where('id', '=', id).executeTakeFirst();
        // A concurrent revoke got there first.
        if (Number(result.numDeletedRows) === 0) throw errors.notFound('Verifier token');
      });
    },

    // --- admin groups -------------------------------------------------------------------------------------------

    /** The permissions a group grants ('all' for Administrators), or null when there is no such group. */
    async groupPermissions(id: number): Promise<string[] | 'all' | null> {
      const group = await db.selectFrom('admin_groups').select('permissions').where('id', '=', id).executeTakeFirst();
      if (group === undefined) return null;
      return id === ADMINISTRATORS_GROUP_ID ? 'all' : parsePermissions(group.permissions);
    },

    async groups(params: { page?: number | undefined; per_page?: number | undefined }): Promise<Page<AdminGroupRecord>> {
      const request = pageRequest(params);
      const total = await db.selectFrom('admin_groups').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await db.selectFrom('admin_groups').selectAll().orderBy('id').limit(request.perPage).offset(request.offset).execute();
      return toPage(
        request,
        total.n,
        rows.map((row) => ({ ...row, permissions: parsePermissions(row.permissions) })),
      );
    },

    async createGroup(name: string, permissions: string[]): Promise<number> {
      const now = nowIso();
      const row = await db
        .insertInto('admin_groups')
        .values({ name, permissions: JSON.stringify([...new Set(permissions)]), created_at: now, updated_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    },

    async updateGroup(id: number, fields: { name?: string | undefined; permissions?: string[] | undefined }): Promise<void> {
      if (id === ADMINISTRATORS_GROUP_ID && fields.permissions !== undefined) {
        throw errors.conflict('The Administrators group always has every permission');
      }
      const result = await db
        .updateTable('admin_groups')
        .set({
          ...(fields.name !== undefined && { name: fields.name }),
          ...(fields.permissions !== undefined && { permissions: JSON.stringify([...new Set(fields.permissions)]) }),
          updated_at: nowIso(),
        })
        .where('id', '=', id)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) throw errors.notFound('Admin group');
    },

    async deleteGroup(id: number): Promise<void> {
      if (id === ADMINISTRATORS_GROUP_ID) throw errors.conflict('The Administrators group cannot be deleted');
      const member = await db.selectFrom('staff').select('id').where('admin_group_id', '=', id).executeTakeFirst();
      if (member !== undefined) throw errors.conflict('The group still has staff members');
      const result = await db.deleteFrom('admin_groups').where('id', '=', id).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) throw errors.notFound('Admin group');
    },
  };
  return service;
}

export type StaffService = ReturnType<typeof createStaffService>;
