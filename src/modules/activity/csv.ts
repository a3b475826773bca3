// `/api/admin/export/activity.csv` (src/http/export-route.ts): the audit log as CSV with the list's filters, newest
// first, read a batch at a time. The changes column is the entry's changes as JSON (secrets only as changed).
import { errors } from '../../platform/errors.ts';
import { csvLine } from '../export/csv.ts';
import { ACTOR_TYPES } from './api.ts';
import type { ActivityFilters, ActivityService } from './service.ts';

const HEADER = ['id', 'created_at', 'priority', 'actor_type', 'staff_id', 'staff_name', 'staff_email', 'ip', 'action', 'target_type', 'target_id', 'changes', 'message'];

const TEXT_FILTERS = ['search', 'action', 'target_type', 'target_id', 'ip', 'date_from', 'date_to'] as const;
const NUMBER_FILTERS = { admin_id: 2_147_483_647, priority: 7, min_priority: 7 } as const;

/** The request's filters, checked as the list's parameters are (422 naming the parameter); empty values are absent. */
export function readActivityFilters(params: Record<string, unknown>): ActivityFilters {
  const out: ActivityFilters = {};
  for (const name of TEXT_FILTERS) {
    const value = params[name];
    if (value === undefined || value === '') continue;
    if (typeof value !== 'string') throw errors.invalid(name, 'must be a string');
    if (value.length > 255) throw errors.invalid(name, 'must be at most 255 characters');
    out[name] = value;
  }
  for (const [name, max] of Object.entries(NUMBER_FILTERS) as Array<[keyof typeof NUMBER_FILTERS, number]>) {
    const value = params[name];
    if (value === undefined || value === '') continue;
    const text = typeof value === 'number' || typeof value === 'string' ? String(value) : '';
    if (!/^\d{1,10}$/.test(text) || Number(text) > max || (name === 'admin_id' && Number(text) < 1)) throw errors.invalid(name, `must be an integer up to ${max}`);
    out[name] = Number(text);
  }
  const actor = params.actor_type;
  if (actor !== undefined && actor !== '') {
    if (!(ACTOR_TYPES as readonly unknown[]).includes(actor)) throw errors.invalid('actor_type', `must be one of ${ACTOR_TYPES.join(', ')}`);
    out.actor_type = actor as (typeof ACTOR_TYPES)[number];
  }
  return out;
}

/** What the export route asks of an export: its kind, permission and rows. */
export interface CsvExport {
  kind: string;
  permission: string;
  rows(params: Record<string, unknown>): AsyncGenerator<string>;
}

export function activityCsvExport(activity: Pick<ActivityService, 'each' | 'list'>): { request(file: string): CsvExport | undefined } {
  async function* rows(filters: ActivityFilters): AsyncGenerator<string> {
    // A bad date answers 422 before anything is sent: the first page is read with the header.
    await activity.list({ ...filters, per_page: 1 });
    yield csvLine(HEADER);
    let batch: string[] = [];
    for await (const e of activity.each(filters)) {
      batch.push(csvLine([e.id, e.created_at, e.priority, e.actor_type, e.admin_id, e.staff?.name, e.staff?.email, e.ip, e.action, e.target_type, e.target_id, JSON.stringify(e.changes), e.message]));
      if (batch.length === 500) {
        yield batch.join('');
        batch = [];
      }
    }
    if (batch.length > 0) yield batch.join('');
  }
  return {
    request(file) {
      if (file !== 'activity.csv') return undefined;
      return { kind: 'activity', permission: 'activity.view', rows: (params) => rows(readActivityFilters(params)) };
    },
  };
}

/** `exports` with the audit log's activity.csv in front of them (the export module does not read the audit log). */
export function withActivityExport<E extends { request(file: string): CsvExport | undefined }>(exports: E, activity: { request(file: string): CsvExport | undefined }): Omit<E, 'request'> & { request(file: string): CsvExport | undefined } {
  return { ...exports, request: (file) => activity.request(file) ?? exports.request(file) };
}
