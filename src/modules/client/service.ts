// Client accounts: sign-up, login, profile, API token, and staff management of clients. The only writer of `clients`.
import type { Kysely, Selectable, Updateable } from 'kysely';
import { isUniqueViolation } from '../../db/errors.ts';
import { containsPattern, likeEscaped } from '../../db/like.ts';
import type { Database } from '../../db/schema.ts';
import type { ClientTable } from '../../db/tables/core.ts';
import type { EventBus } from '../../events.ts';
import { errors } from '../../http/errors.ts';
import type { ClientPrincipal } from '../../http/identity.ts';
import { newApiToken, type SecretBox } from '../../lib/crypto.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { hashPassword, passwordProblem, verifyPassword } from '../../lib/passwords.ts';
import { nowIso } from '../../lib/time.ts';
import type { SessionService } from '../session/service.ts';
import { inTransaction } from '../../db/transaction.ts';
import './events.ts';

export type ClientStatus = 'active' | 'suspended' | 'canceled';

export const PROFILE_FIELDS = [
  'first_name',
  'last_name',
  'company',
  'phone',
  'address_1',
  'address_2',
  'city',
  'state',
  'postcode',
  'country',
  'currency',
] as const;

export type ProfileField = (typeof PROFILE_FIELDS)[number];
export type ProfileInput = Partial<Record<ProfileField, string | undefined>>;

export interface ClientRecord {
  id: number;
  email: string;
  first_name: string;
  last_name: string | null;
  company: string | null;
  phone: string | null;
  address_1: string | null;
  address_2: string | null;
  city: string | null;
  state: string | null;
  postcode: string | null;
  country: string | null;
  currency: string | null;
  status: ClientStatus;
  created_at: string;
  updated_at: string;
}

export interface ClientFilters {
  search?: string | undefined;
  status?: ClientStatus | undefined;
  email?: string | undefined;
  name?: string | undefined;
  company?: string | undefined;
  date_from?: string | undefined;
  date_to?: string | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

export interface ClientServiceDeps {
  db: Kysely<Database>;
  secrets: SecretBox;
  events: EventBus;
  sessions: Pick<SessionService, 'destroyAllOf'>;
  defaultCurrency: string;
}

function toRecord(row: Selectable<ClientTable>): ClientRecord {
  return {
    id: row.id,
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    company: row.company,
    phone: row.phone,
    address_1: row.address_1,
    address_2: row.address_2,
    city: row.city,
    state: row.state,
    postcode: row.postcode,
    country: row.country,
    currency: row.currency,
    status: row.status,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function principalOf(row: Selectable<ClientTable> | undefined): ClientPrincipal | null {
  if (row === undefined || row.status !== 'active') return null;
  return { id: row.id, email: row.email, name: [row.first_name, row.last_name].filter(Boolean).join(' ') };
}

/** Profile fields to store: a blank string clears an optional field (stored and returned as null). */
function profileValues(input: ProfileInput): Updateable<ClientTable> {
  const out: Record<string, string | null> = {};
  for (const field of PROFILE_FIELDS) {
    const value = input[field];
    if (value === undefined) continue;
    if (field === 'first_name') {
      if (value.trim() === '') throw errors.invalid('first_name', 'must not be empty');
      out[field] = value;
    } else if (field === 'currency') {
      if (value !== '' && !/^[A-Za-z]{3}$/.test(value)) throw errors.invalid('currency', 'must be a three-letter code');
      out[field] = value === '' ? null : value.toUpperCase();
    } else {
      out[field] = value === '' ? null : value;
    }
  }
  return out;
}

function checkPassword(password: string, confirm: string | undefined): void {
  if (confirm !== undefined && password !== confirm) throw errors.invalid('password_confirm', 'does not match password');
  const problem = passwordProblem(password);
  if (problem !== null) throw errors.invalid('password', problem);
}

export function createClientService({ db, secrets, events, sessions, defaultCurrency }: ClientServiceDeps) {
  async function requireClient(id: number, trx: Kysely<Database> = db): Promise<Selectable<ClientTable>> {
    const row = await trx.selectFrom('clients').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Client');
    return row;
  }

  async function emailTaken(email: string, exceptId?: number): Promise<boolean> {
    let query = db.selectFrom('clients').select('id').where('email', '=', email.toLowerCase());
    if (exceptId !== undefined) query = query.where('id', '!=', exceptId);
    return (await query.executeTakeFirst()) !== undefined;
  }

  return {
    async principalByToken(token: string): Promise<ClientPrincipal | null> {
      return principalOf(
        await db.selectFrom('clients').selectAll().where('api_token_hash', '=', secrets.hash(token)).executeTakeFirst(),
      );
    },

    async principalById(id: number): Promise<ClientPrincipal | null> {
      return principalOf(await db.selectFrom('clients').selectAll().where('id', '=', id).executeTakeFirst());
    },

    /** The active client with these credentials, or null; same work whether or not the e-mail exists. */
    async login(email: string, password: string): Promise<ClientPrincipal | null> {
      const row = await db.selectFrom('clients').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
      const ok = await verifyPassword(row?.password_hash ?? null, password);
      return ok ? principalOf(row) : null;
    },

    async create(
      input: ProfileInput & {
        email: string;
        first_name: string;
        password?: string | undefined;
        password_confirm?: string | undefined;
        status?: ClientStatus | undefined;
      },
    ): Promise<number> {
      if (input.password !== undefined) checkPassword(input.password, input.password_confirm);
      if (await emailTaken(input.email)) throw errors.conflict('A client with this e-mail already exists');
      const token = newApiToken();
      const now = nowIso();
      const profile = profileValues(input);
      // Hashed before the transaction: argon2 takes a while and must not hold the write lock.
      const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
      const row = await inTransaction(db, async (trx) => {
        const created = await trx
          .insertInto('clients')
          .values({
            email: input.email.toLowerCase(),
            password_hash: passwordHash,
            first_name: input.first_name,
            last_name: profile.last_name ?? null,
            company: profile.company ?? null,
            phone: profile.phone ?? null,
            address_1: profile.address_1 ?? null,
            address_2: profile.address_2 ?? null,
            city: profile.city ?? null,
            state: profile.state ?? null,
            postcode: profile.postcode ?? null,
            country: profile.country ?? null,
            currency: profile.currency ?? defaultCurrency,
            status: input.status ?? 'active',
            api_token_hash: secrets.hash(token),
            api_token_enc: secrets.encrypt(token),
            created_at: now,
            updated_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow()
          .catch((error: unknown) => {
            if (isUniqueViolation(error)) throw errors.conflict('A client with this e-mail already exists');
            throw error;
          });
        await events.emit('client.created', { clientId: created.id }, trx);
        return created;
      });
      return row.id;
    },

    async list(filters: ClientFilters): Promise<Page<ClientRecord>> {
      const request = pageRequest(filters);
      let query = db.selectFrom('clients');
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      // What staff type is matched literally: `%` and `_` are not wildcards (containsPattern escapes them).
      if (filters.email !== undefined && filters.email !== '') {
        const pattern = containsPattern(filters.email.toLowerCase());
        query = query.where((eb) => likeEscaped(eb.ref('email'), pattern));
      }
      if (filters.company !== undefined && filters.company !== '') {
        const pattern = containsPattern(filters.company.toLowerCase());
        query = query.where((eb) => likeEscaped(eb.fn<string | null>('lower', ['company']), pattern));
      }
      if (filters.name !== undefined && filters.name !== '') {
        const pattern = containsPattern(filters.name.toLowerCase());
        query = query.where((eb) =>
          eb.or([likeEscaped(eb.fn<string>('lower', ['first_name']), pattern), likeEscaped(eb.fn<string | null>('lower', ['last_name']), pattern)]),
        );
      }
      if (filters.search !== undefined && filters.search !== '') {
        const pattern = containsPattern(filters.search.toLowerCase());
        const asId = /^\d+$/.test(filters.search) ? Number(filters.search) : null;
        query = query.where((eb) =>
          eb.or([
            likeEscaped(eb.ref('email'), pattern),
            likeEscaped(eb.fn<string>('lower', ['first_name']), pattern),
            likeEscaped(eb.fn<string | null>('lower', ['last_name']), pattern),
            likeEscaped(eb.fn<string | null>('lower', ['company']), pattern),
            ...(asId !== null && asId <= 2_147_483_647 ? [eb('id', '=', asId)] : []),
          ]),
        );
      }
      if (filters.date_from !== undefined) query = query.where('created_at', '>=', `${filters.date_from}T00:00:00Z`);
      if (filters.date_to !== undefined) query = query.where('created_at', '<=', `${filters.date_to}T23:59:59Z`);
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(request.perPage)
        .offset(request.offset)
        .execute();
      return toPage(request, total.n, rows.map(toRecord));
    },

    async get(id: number): Promise<ClientRecord> {
      return toRecord(await requireClient(id));
    },

    async update(id: number, fields: ProfileInput & { email?: string | undefined; status?: ClientStatus | undefined }): Promise<void> {
      const row = await requireClient(id);
      if (fields.email !== undefined && (await emailTaken(fields.email, id))) {
        throw errors.conflict('A client with this e-mail already exists');
      }
      await inTransaction(db, async (trx) => {
        // The status before this change is read under the row's lock (a no-op update), so two concurrent status
        // changes cannot both miss a transition: listeners (sessions, API keys) hear of every one.
        let before = row.status;
        if (fields.status !== undefined) {
          await trx.updateTable('clients').set((eb) => ({ updated_at: eb.ref('updated_at') })).where('id', '=', id).execute();
          before = (await requireClient(id, trx)).status;
        }
        const deactivating = fields.status !== undefined && fields.status !== 'active' && before === 'active';
        const reactivating = fields.status === 'active' && before !== 'active';
        await trx
          .updateTable('clients')
          .set({
            ...profileValues(fields),
            ...(fields.email !== undefined && { email: fields.email.toLowerCase() }),
            ...(fields.status !== undefined && { status: fields.status }),
            updated_at: nowIso(),
          })
          .where('id', '=', id)
          .execute()
          .catch((error: unknown) => {
            if (isUniqueViolation(error)) throw errors.conflict('A client with this e-mail already exists');
            throw error;
          });
        if (deactivating) {
          await sessions.destroyAllOf('client', id, trx);
          await events.emit('client.deactivated', { clientId: id }, trx);
        }
        if (reactivating) await events.emit('client.reactivated', { clientId: id }, trx);
      });
    },

    async delete(id: number): Promise<void> {
      await inTransaction(db, async (trx) => {
        await requireClient(id, trx);
        // Listeners (orders, carts, keys…) clean up or refuse with 409 before the row goes.
        await events.emit('client.deleted', { clientId: id }, trx);
        await sessions.destroyAllOf('client', id, trx);
        await trx.deleteFrom('clients').where('id', '=', id).execute();
      });
    },

    /**
     * Sets a new password and ends the account's other browser sessions: whoever knew the old password is logged
     * out. `keepSessionIdHash` is the session making the change, when the owner makes it.
     */
    async changePassword(id: number, password: string, confirm: string, keepSessionIdHash?: string): Promise<void> {
      checkPassword(password, confirm);
      await requireClient(id);
      const passwordHash = await hashPassword(password);
      await inTransaction(db, async (trx) => {
        await trx.updateTable('clients').set({ password_hash: passwordHash, updated_at: nowIso() }).where('id', '=', id).execute();
        await sessions.destroyAllOf('client', id, trx, keepSessionIdHash);
      });
    },

    async changeOwnPassword(id: number, current: string, password: string, confirm: string, keepSessionIdHash?: string): Promise<void> {
      const row = await requireClient(id);
      if (!(await verifyPassword(row.password_hash, current))) throw errors.invalid('current_password', 'is not correct');
      await this.changePassword(id, password, confirm, keepSessionIdHash);
    },

    /** Tells the other modules a client has just logged in or signed up (the cart moves its guest cart over). */
    async loggedIn(id: number, previousSessionId: string | null): Promise<void> {
      await inTransaction(db, (trx) => events.emit('client.logged_in', { clientId: id, previousSessionId }, trx));
    },

    async apiToken(id: number): Promise<string> {
      return secrets.decrypt((await requireClient(id)).api_token_enc);
    },

    async rotateApiToken(id: number): Promise<string> {
      await requireClient(id);
      const token = newApiToken();
      await db
        .updateTable('clients')
        .set({ api_token_hash: secrets.hash(token), api_token_enc: secrets.encrypt(token), updated_at: nowIso() })
        .where('id', '=', id)
        .execute();
      return token;
    },
  };
}

export type ClientService = ReturnType<typeof createClientService>;
