// Client accounts: sign-up, login, profile, API token, and staff management of clients. The only writer of `clients`.
import { sql, type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder, type Selectable, type SqlBool } from 'kysely';
import { isUniqueViolation } from '../../db/errors.ts';
import { listCount } from '../../db/list-counts.ts';
import { inIds, matchingIds, SEARCH_CAP, textMatches, walkedTotal, type SearchedColumn } from '../../db/search.ts';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import type { ClientPrincipal } from '../../platform/identity.ts';
import { newApiToken, type SecretBox } from '../../lib/crypto.ts';
import { createdRange, searchText } from '../../platform/list-filters.ts';
import { searchedId } from '../../lib/searched-id.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { hashPassword, isLegacyHash, passwordProblem, verifyPassword } from '../../lib/passwords.ts';
import { nowIso } from '../../lib/time.ts';
import type { SessionService } from '../session/service.ts';
import { profileValues, type ProfileInput } from './profile-values.ts';
import type { Selling } from '../currency/selling.ts';
import { inTransaction } from '../../platform/transaction.ts';
import './events.ts';
import { announceVatNumber, withCheckedVatNumber } from './vat-number.ts';

export type ClientStatus = 'active' | 'suspended' | 'canceled';

export { PROFILE_FIELDS, type ProfileField, type ProfileInput } from './profile-values.ts';

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
  /** CONTRACT §8: the buyer's VAT number (shown on invoices) and whether staff made the client tax-exempt. */
  vat_number: string | null;
  tax_exempt: boolean;
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
  /** The instance's currencies: a client's is one of them, the default unless given, fixed by the first order. */
  selling: Pick<Selling, 'checkClientCurrency' | 'defaultCode'>;
}

function toRecord(row: Selectable<Database['clients']>): ClientRecord {
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
    vat_number: row.vat_number,
    tax_exempt: row.tax_exempt === 1,
    status: row.status,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

type TextColumn = 'email' | 'first_name' | 'last_name' | 'company';
/** What the order and invoice lists' `search` matches of their client. */
const CONTACT_COLUMNS: readonly TextColumn[] = ['email', 'first_name', 'last_name'];

/** How each searched column is held: the e-mail stored lower-cased, the others compared through lower(). */
const SEARCHED: Record<TextColumn, SearchedColumn> = {
  email: { column: 'email', stored: 'lower' },
  first_name: { column: 'first_name', stored: 'any' },
  last_name: { column: 'last_name', stored: 'any' },
  company: { column: 'company', stored: 'any' },
};

/**
 * Any of `columns` matches `text`, case-insensitively and literally (`%` and `_` are not wildcards): contains it,
 * or starts with it when it has one or two characters (src/db/search.ts).
 */
function columnsMatch(columns: readonly TextColumn[], text: string): RawBuilder<SqlBool> {
  return textMatches('clients', columns.map((column) => SEARCHED[column]), text, false);
}

/** "First Last", or the first name alone. */
function displayName(row: { first_name: string; last_name: string | null }): string {
  return [row.first_name, row.last_name].filter(Boolean).join(' ');
}

function principalOf(row: Selectable<Database['clients']> | undefined): ClientPrincipal | null {
  if (row === undefined || row.status !== 'active') return null;
  return { id: row.id, email: row.email, name: displayName(row) };
}

function checkPassword(password: string, confirm: string | undefined): void {
  if (confirm !== undefined && password !== confirm) throw errors.invalid('password_confirm', 'does not match password');
  const problem = passwordProblem(password);
  if (problem !== null) throw errors.invalid('password', problem);
}

export function createClientService({ db, secrets, events, sessions, selling }: ClientServiceDeps) {
  async function requireClient(id: number, trx: Kysely<Database> = db): Promise<Selectable<Database['clients']>> {
    const row = await trx.selectFrom('clients').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Client');
    return row;
  }

  async function emailTaken(email: string, exceptId?: number): Promise<boolean> {
    const query = db.selectFrom('clients').select('id').where('email', '=', email.toLowerCase());
    return (await (exceptId === undefined ? query : query.where('id', '!=', exceptId)).executeTakeFirst()) !== undefined;
  }

  /**
   * Ids of the clients whose `columns` match `text` (plus `id`, a searched id) when at most `cap`; null when more
   * (src/db/search.ts).
   */
  async function candidates(columns: readonly TextColumn[], text: string, id?: number, cap = SEARCH_CAP): Promise<number[] | null> {
    const ids = await matchingIds(db, { table: 'clients', fts: 'clients_search' }, columns.map((column) => SEARCHED[column]), text, cap);
    if (ids === null) return null;
    return id === undefined ? ids : [...ids, id];
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

    /** The active client with these credentials, or null (same work whether the e-mail exists); an imported bcrypt hash becomes argon2id here. */
    async login(email: string, password: string): Promise<ClientPrincipal | null> {
      const row = await db.selectFrom('clients').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
      const ok = await verifyPassword(row?.password_hash ?? null, password);
      if (ok && row !== undefined && isLegacyHash(row.password_hash)) await db.updateTable('clients').set({ password_hash: await hashPassword(password) }).where('id', '=', row.id).execute();
      return ok ? principalOf(row) : null;
    },

    async create(
      input: ProfileInput & {
        email: string;
        first_name: string;
        password?: string | undefined;
        password_confirm?: string | undefined;
        status?: ClientStatus | undefined;
        tax_exempt?: boolean | undefined;
      },
      /** `signup`: the client signed itself up (guest/client/create); staff-created accounts count as confirmed. */
      options: { signup?: boolean } = {},
    ): Promise<number> {
      if (input.password !== undefined) checkPassword(input.password, input.password_confirm);
      if (await emailTaken(input.email)) throw errors.conflict('A client with this e-mail already exists');
      const token = newApiToken();
      const now = nowIso();
      const profile = withCheckedVatNumber(profileValues(input), null);
      const signup = options.signup === true;
      // Hashed before the transaction: argon2 takes ~20 ms, too long to hold SQLite's single writer.
      const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
      const row = await inTransaction(db, async (trx) => {
        const inserted = await trx
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
            currency: profile.currency == null ? await selling.defaultCode(trx) : await selling.checkClientCurrency(trx, null, profile.currency),
            vat_number: profile.vat_number ?? null,
            ...(input.tax_exempt !== undefined && { tax_exempt: input.tax_exempt ? 1 : 0 }),
            status: input.status ?? 'active',
            api_token_hash: secrets.hash(token),
            api_token_enc: secrets.encrypt(token),
            created_at: now,
            updated_at: now,
            email_verified_at: signup ? null : now,
            self_signup: signup ? 1 : 0,
          })
          .returning('id')
          .executeTakeFirstOrThrow()
          .catch((error: unknown) => {
            if (isUniqueViolation(error)) throw errors.conflict('A client with this e-mail already exists');
            throw error;
          });
        // Listeners (the sign-up mail with its confirmation link) write in this transaction: both or neither.
        if (signup) await events.emit('client.signed_up', { clientId: inserted.id, email: input.email.toLowerCase(), firstName: input.first_name }, trx);
        await events.emit('client.created', { clientId: inserted.id }, trx);
        await announceVatNumber(events, trx, inserted.id, profile, null);
        return inserted;
      });
      return row.id;
    },

    async list(filters: ClientFilters): Promise<Page<ClientRecord>> {
      const request = pageRequest(filters);
      let query = db.selectFrom('clients');
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      const created = createdRange(filters);
      if (created.from !== undefined) query = query.where('created_at', '>=', created.from);
      if (created.to !== undefined) query = query.where('created_at', '<=', created.to);
      // Text filters ("contains", case-insensitive, literal): each is an exact rule on the row; the smallest set of
      // candidates an index offers, if any is small, drives the query (src/db/search.ts).
      const texts: Array<{ columns: readonly TextColumn[]; text: string; id?: number }> = [];
      const searched = searchText(filters.search);
      if (searched !== null) {
        const id = searchedId(searched);
        texts.push({ columns: ['email', 'first_name', 'last_name', 'company'], text: searched, ...(id !== null && { id }) });
      }
      if (searchText(filters.email) !== null) texts.push({ columns: ['email'], text: filters.email! });
      if (searchText(filters.name) !== null) texts.push({ columns: ['first_name', 'last_name'], text: filters.name! });
      if (searchText(filters.company) !== null) texts.push({ columns: ['company'], text: filters.company! });
      let driver: number[] | null = null;
      for (const { columns, text, id } of texts) {
        query = query.where((eb) => eb.or([columnsMatch(columns, text), ...(id !== undefined ? [eb('clients.id', '=', id)] : [])]));
        const ids = await candidates(columns, text, id);
        if (ids !== null && (driver === null || ids.length < driver.length)) driver = ids;
      }
      if (driver !== null) query = query.where(inIds(db, sql.ref('clients.id'), driver));
      const count = async (): Promise<number> => Number((await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n);
      // A common search (text filters, none with few matches) is walked, not counted (src/db/search.ts).
      const walk = texts.length > 0 && driver === null;
      // A later page of a list without a search takes its ids from the index alone, then reads those rows:
      // PostgreSQL would otherwise fetch every row it skips.
      const newestFirst = <Q extends SelectQueryBuilder<Database, 'clients', object>>(q: Q): Q => q.orderBy('created_at', 'desc').orderBy('id', 'desc') as Q;
      const deep = texts.length === 0 && request.offset > 0;
      const limited = deep ? newestFirst(query.where('clients.id', 'in', newestFirst(query.select('clients.id')).limit(request.perPage).offset(request.offset))) : newestFirst(query).limit(request.perPage + (walk ? 1 : 0)).offset(request.offset);
      const rows = await limited.selectAll().execute();
      const more = walk && rows.length > request.perPage;
      if (more) rows.pop();
      // Totals of the unfiltered list and of a status alone are kept by triggers (src/db/list-counts.ts).
      const unfiltered = texts.length === 0 && created.from === undefined && created.to === undefined;
      const total = (walk ? walkedTotal(request.offset, rows.length, more) : null) ?? { n: unfiltered ? await listCount(db, 'clients', filters.status) : await count(), capped: false };
      return toPage(request, total.n, rows.map(toRecord), total.capped);
    },

    async get(id: number): Promise<ClientRecord> {
      return toRecord(await requireClient(id));
    },

    /**
     * For the order and invoice lists' `search` (the client's e-mail or name contains `text`): the matching clients'
     * ids when there are at most `cap` candidates, else null (a common fragment: test each row with `matches`).
     */
    async idsMatching(text: string, cap: number): Promise<number[] | null> {
      return candidates(CONTACT_COLUMNS, text, undefined, cap);
    },

    /**
     * Whether the client whose id is `clientId` (a column of the caller's query) matches `text` as idsMatching. A
     * scalar subquery, evaluated for each row the caller's query reaches: as EXISTS, PostgreSQL would first collect
     * every matching client into a hash (90,000 of them for a common name) before returning the first row.
     */
    matches(text: string, clientId: Expression<number>): Expression<SqlBool> {
      const match = db
        .selectFrom('clients')
        .select(columnsMatch(CONTACT_COLUMNS, text).as('hit'))
        .where((eb) => eb(eb.ref('clients.id'), '=', clientId));
      return sql<SqlBool>`coalesce(${match}, false)`;
    },

    /** E-mail and display name of each of these clients that exists, for lists that show whose a record is. */
    async contacts(ids: readonly number[]): Promise<Map<number, { email: string; name: string }>> {
      const unique = [...new Set(ids)];
      if (unique.length === 0) return new Map();
      const rows = await db.selectFrom('clients').select(['id', 'email', 'first_name', 'last_name']).where('id', 'in', unique).execute();
      return new Map(rows.map((row) => [row.id, { email: row.email, name: displayName(row) }]));
    },

    /**
     * Inside a checkout: makes `code` the client's currency, as the first order fixes it (409 when an earlier sale
     * fixed another one; a client who already has it changes nothing).
     */
    async fixCurrency(trx: Kysely<Database>, id: number, code: string): Promise<void> {
      const currency = await selling.checkClientCurrency(trx, id, code);
      await trx.updateTable('clients').set({ currency }).where('id', '=', id).where((eb) => eb.or([eb('currency', 'is', null), eb('currency', '!=', currency)])).execute();
    },

    async update(
      id: number,
      fields: ProfileInput & { email?: string | undefined; status?: ClientStatus | undefined; tax_exempt?: boolean | undefined },
    ): Promise<void> {
      const row = await requireClient(id);
      const profile = withCheckedVatNumber(profileValues(fields, row.country), row);
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
        // 422 for a currency the instance lacks, 409 for a change after the client's first order.
        if (typeof profile.currency === 'string') await selling.checkClientCurrency(trx, id, profile.currency);
        const deactivating = fields.status !== undefined && fields.status !== 'active' && before === 'active';
        const reactivating = fields.status === 'active' && before !== 'active';
        await trx
          .updateTable('clients')
          .set({
            ...profile,
            ...(fields.tax_exempt !== undefined && { tax_exempt: fields.tax_exempt ? 1 : 0 }),
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
        await announceVatNumber(events, trx, id, profile, row);
        if (fields.email !== undefined && fields.email.toLowerCase() !== row.email) await events.emit('client.credentials_changed', { clientId: id, reason: 'email' }, trx);
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
        await events.emit('client.credentials_changed', { clientId: id, reason: 'password' }, trx);
      });
    },

    async verifyOwnPassword(id: number, password: string): Promise<boolean> {
      return verifyPassword((await requireClient(id)).password_hash, password);
    },

    /** The account behind an address, active or not, for password reset; null when there is none. */
    async findByEmail(email: string): Promise<{ id: number; email: string; name: string; active: boolean } | null> {
      const row = await db.selectFrom('clients').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
      if (row === undefined) return null;
      return { id: row.id, email: row.email, name: [row.first_name, row.last_name].filter(Boolean).join(' '), active: row.status === 'active' };
    },

    /**
     * Password reset, inside the caller's transaction (the one that spends the reset token): stores the new hash and
     * ends every session of the account. Returns who to notify, or null when the client is gone or not active.
     */
    async resetPassword(trx: Kysely<Database>, id: number, passwordHash: string): Promise<{ email: string; firstName: string } | null> {
      const row = await trx
        .updateTable('clients')
        .set({ password_hash: passwordHash, updated_at: nowIso() })
        .where('id', '=', id)
        .where('status', '=', 'active')
        .returning(['email', 'first_name'])
        .executeTakeFirst();
      if (row === undefined) return null;
      await sessions.destroyAllOf('client', id, trx);
      return { email: row.email, firstName: row.first_name };
    },

    async emailVerifiedAt(id: number): Promise<string | null> {
      return (await requireClient(id)).email_verified_at;
    },

    /** Marks the address confirmed; with `newEmail`, the client's address becomes that one (a confirmed change). */
    async confirmEmail(trx: Kysely<Database>, id: number, newEmail: string | null): Promise<boolean> {
      const now = nowIso();
      const result = await trx
        .updateTable('clients')
        .set({ email_verified_at: now, updated_at: now, ...(newEmail !== null && { email: newEmail.toLowerCase() }) })
        .where('id', '=', id)
        .executeTakeFirst()
        .catch((error: unknown) => {
          if (isUniqueViolation(error)) throw errors.invalid('email', 'is already used by another account');
          throw error;
        });
      return result.numUpdatedRows > 0n;
    },

    /** Whether another client already has this address (a change of e-mail must not take it). */
    async emailTakenByOther(email: string, id: number): Promise<boolean> {
      return emailTaken(email, id);
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
