// The audit log (docs/audit-log.md): writes entries in the transaction of the change they record, lists them for
// admin/activity/log_get_list and the CSV export, and prunes those past the retention. The only writer of
// `activity_log`; the table refuses UPDATE, and DELETE outside `prune` (migration 046).
import type { Kysely, Selectable, SelectQueryBuilder } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { likeEscaped, containsPattern } from '../../db/like.ts';
import { errors } from '../../platform/errors.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { isoSeconds } from '../../lib/time.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import type { ActivityLogTable, ActorType } from './tables.ts';
import type { Change } from './changes.ts';

/** FOSSBilling's priorities: 6 info, 4 warning. */
export const PRIORITY_INFO = 6;
export const PRIORITY_WARNING = 4;

export interface NewEntry {
  actorType: ActorType;
  staff: { id: number; name: string; email: string } | null;
  ip: string | null;
  action: string;
  target: { type: string; id: string | null } | null;
  changes: Change[];
  message: string;
  priority?: number;
}

export interface ActivityEntry {
  id: number;
  priority: number;
  message: string;
  ip: string | null;
  created_at: string;
  admin_id: number | null;
  client_id: null;
  staff: { id: number; name: string | null; email: string | null } | null;
  actor_type: ActorType;
  action: string;
  target_type: string | null;
  target_id: string | null;
  changes: Change[];
}

export interface ActivityFilters {
  search?: string | undefined;
  admin_id?: number | undefined;
  actor_type?: ActorType | undefined;
  action?: string | undefined;
  target_type?: string | undefined;
  target_id?: string | undefined;
  ip?: string | undefined;
  priority?: number | undefined;
  min_priority?: number | undefined;
  date_from?: string | undefined;
  date_to?: string | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

type Query = SelectQueryBuilder<Database, 'activity_log', object>;

/** A day ("2026-11-26") as its first or last second, or a moment as given; 422 naming the parameter otherwise. */
function boundary(name: string, text: string, end: boolean): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    // Round-tripped: Date.parse takes 2026-02-31 and means 3 March.
    const day = Date.parse(`${text}T00:00:00Z`);
    if (Number.isNaN(day) || new Date(day).toISOString().slice(0, 10) !== text) throw errors.invalid(name, 'must be a date (YYYY-MM-DD) or an ISO 8601 moment');
    return `${text}T${end ? '23:59:59' : '00:00:00'}Z`;
  }
  const time = Date.parse(text);
  if (Number.isNaN(time) || !/^\d{4}-\d{2}-\d{2}T/.test(text)) throw errors.invalid(name, 'must be a date (YYYY-MM-DD) or an ISO 8601 moment');
  return isoSeconds(new Date(time));
}

function parseChanges(text: string): Change[] {
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? (value as Change[]) : [];
  } catch {
    return [];
  }
}

export function toEntry(row: Selectable<ActivityLogTable>): ActivityEntry {
  return {
    id: row.id,
    priority: row.priority,
    message: row.message,
    ip: row.ip,
    created_at: row.created_at,
    admin_id: row.staff_id,
    client_id: null,
    staff: row.staff_id === null ? null : { id: row.staff_id, name: row.staff_name, email: row.staff_email },
    actor_type: row.actor_type,
    action: row.action,
    target_type: row.target_type,
    target_id: row.target_id,
    changes: parseChanges(row.changes),
  };
}

export function createActivityService(deps: { db: Kysely<Database>; now?: () => Date }) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());

  function filtered(filters: ActivityFilters): Query {
    let query: Query = db.selectFrom('activity_log');
    if (filters.admin_id !== undefined) query = query.where('staff_id', '=', filters.admin_id);
    if (filters.actor_type !== undefined) query = query.where('actor_type', '=', filters.actor_type);
    if (filters.action !== undefined && filters.action !== '') {
      // `admin/order/` (ending in a slash) is every action of a module; otherwise the exact action.
      query = filters.action.endsWith('/')
        ? query.where((eb) => likeEscaped(eb.ref('action'), `${containsPattern(filters.action!).slice(1, -1)}%`))
        : query.where('action', '=', filters.action);
    }
    if (filters.target_type !== undefined && filters.target_type !== '') query = query.where('target_type', '=', filters.target_type);
    if (filters.target_id !== undefined && filters.target_id !== '') query = query.where('target_id', '=', filters.target_id);
    if (filters.ip !== undefined && filters.ip !== '') query = query.where('ip', '=', filters.ip);
    if (filters.priority !== undefined) query = query.where('priority', '=', filters.priority);
    else if (filters.min_priority !== undefined) query = query.where('priority', '<=', filters.min_priority);
    if (filters.date_from !== undefined && filters.date_from !== '') query = query.where('created_at', '>=', boundary('date_from', filters.date_from, false));
    if (filters.date_to !== undefined && filters.date_to !== '') query = query.where('created_at', '<=', boundary('date_to', filters.date_to, true));
    if (filters.search !== undefined && filters.search.trim() !== '') {
      const pattern = containsPattern(filters.search.trim().toLowerCase());
      query = query.where((eb) =>
        eb.or([
          likeEscaped(eb.fn('lower', [eb.ref('message')]), pattern),
          likeEscaped(eb.fn('lower', [eb.ref('action')]), pattern),
          likeEscaped(eb.fn('lower', [eb.ref('staff_name')]), pattern),
        ]),
      );
    }
    return query;
  }

  return {
    /** Writes an entry with `trx`: the transaction of the change it records, or the database for a login. */
    async write(trx: Kysely<Database>, entry: NewEntry): Promise<void> {
      await trx
        .insertInto('activity_log')
        .values({
          created_at: isoSeconds(now()),
          priority: entry.priority ?? PRIORITY_INFO,
          actor_type: entry.actorType,
          staff_id: entry.staff?.id ?? null,
          staff_name: entry.staff?.name.slice(0, 255) ?? null,
          staff_email: entry.staff?.email.slice(0, 254) ?? null,
          ip: entry.ip === null ? null : entry.ip.slice(0, 64),
          action: entry.action.slice(0, 100),
          target_type: entry.target?.type.slice(0, 50) ?? null,
          target_id: entry.target?.id?.slice(0, 100) ?? null,
          changes: JSON.stringify(entry.changes),
          message: entry.message.slice(0, 1000),
        })
        .execute();
    },

    /** admin/activity/log_get_list: newest first, FOSSBilling's shape and filters plus who / what / target. */
    async list(filters: ActivityFilters): Promise<Page<ActivityEntry>> {
      const request = pageRequest(filters);
      const query = filtered(filters);
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.selectAll().orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, rows.map(toEntry));
    },

    /** The entries the filters select, newest first, a page of `size` at a time (the CSV export streams them). */
    async *each(filters: ActivityFilters, size = 500): AsyncGenerator<ActivityEntry> {
      // No bound on the first batch: PostgreSQL refuses to compare an integer column with a number past its range.
      let before: number | null = null;
      for (;;) {
        const query = filtered(filters).selectAll();
        const rows = await (before === null ? query : query.where('id', '<', before)).orderBy('id', 'desc').limit(size).execute();
        for (const row of rows) yield toEntry(row);
        if (rows.length < size) return;
        before = rows[rows.length - 1]!.id;
      }
    },

    /**
     * Deletes the entries older than `retentionDays` before `at`; the only DELETE the table lets through: the
     * pruning marks its own transaction (activity_log_pruning) and removes the mark before it commits.
     */
    async prune(at: Date, retentionDays: number): Promise<number> {
      const cutoff = isoSeconds(new Date(at.getTime() - retentionDays * 86_400_000));
      return inTransaction(db, async (trx) => {
        await trx.insertInto('activity_log_pruning').values({ started_at: isoSeconds(at) }).execute();
        const result = await trx.deleteFrom('activity_log').where('created_at', '<', cutoff).executeTakeFirst();
        await trx.deleteFrom('activity_log_pruning').execute();
        return Number(result.numDeletedRows);
      });
    },
  };
}

export type ActivityService = ReturnType<typeof createActivityService>;
