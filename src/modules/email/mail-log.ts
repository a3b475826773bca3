// The mail log as staff and clients read it (CONTRACT §10): each message with its delivery state, which lives with
// its outbox item (a read-only join: the outbox stays the only writer of it). Secret links read "[link hidden]".
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EmailTable } from './tables.ts';
import type { OutboxStatus } from '../outbox/types.ts';
import { errors } from '../../platform/errors.ts';
import { pageRequest, toPage } from '../../lib/paginator.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { ClientEmailRecord, EmailRecord } from './types.ts';
import { HIDDEN_SECRET, SECRET_MARKER_PATTERN } from './templates.ts';

type EmailRow = Selectable<EmailTable>;

export function createMailLog(db: Kysely<Database>) {
  /** What staff and clients read: secret links shown as "[link hidden]". */
  const shown = (text: string): string => text.replace(SECRET_MARKER_PATTERN, HIDDEN_SECRET);

  function logQuery(filters: { client_id?: number | undefined; status?: OutboxStatus | undefined }) {
    // The delivery state lives with the outbox item: a read-only join, the outbox stays the only writer.
    let query = db.selectFrom('emails').innerJoin('outbox_messages', 'outbox_messages.id', 'emails.outbox_id');
    if (filters.client_id !== undefined) query = query.where('emails.client_id', '=', filters.client_id);
    if (filters.status !== undefined) query = query.where('outbox_messages.status', '=', filters.status);
    return query;
  }

  function selectRecord(query: ReturnType<typeof logQuery>) {
    return query.selectAll('emails').select([
      'outbox_messages.status',
      'outbox_messages.attempts',
      'outbox_messages.last_error',
      'outbox_messages.run_at',
      'outbox_messages.done_at',
      'outbox_messages.updated_at',
    ]);
  }

  type JoinedRow = EmailRow & { status: OutboxStatus; attempts: number; last_error: string | null; run_at: string; done_at: string | null; updated_at: string };

  function toRecord(row: JoinedRow): EmailRecord {
    return {
      id: row.id,
      client_id: row.client_id,
      staff_id: row.staff_id,
      template: row.template,
      sender: row.sender,
      recipients: row.to_email,
      to_name: row.to_name,
      subject: row.subject,
      content_html: shown(row.html),
      content_text: shown(row.text),
      status: row.status,
      attempts: row.attempts,
      last_error: row.last_error,
      message_id: row.message_id,
      next_attempt_at: row.status === 'pending' ? isoSeconds(new Date(row.run_at)) : null,
      created_at: row.created_at,
      sent_at: row.done_at === null ? null : isoSeconds(new Date(row.done_at)),
      updated_at: isoSeconds(new Date(row.updated_at)),
    };
  }

  function forClient(record: EmailRecord): ClientEmailRecord {
    const { id, template, sender, recipients, subject, content_html, content_text, status, created_at, sent_at, updated_at } = record;
    return { id, template, sender, recipients, subject, content_html, content_text, status, created_at, sent_at, updated_at };
  }

  async function list(filters: { client_id?: number | undefined; status?: OutboxStatus | undefined; page?: number | undefined; per_page?: number | undefined }) {
    const request = pageRequest(filters);
    const total = await logQuery(filters)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const rows = await selectRecord(logQuery(filters)).orderBy('emails.id', 'desc').limit(request.perPage).offset(request.offset).execute();
    return toPage(request, total.n, rows.map(toRecord));
  }

  async function get(id: number, clientId?: number): Promise<EmailRecord> {
    let query = selectRecord(logQuery({})).where('emails.id', '=', id);
    if (clientId !== undefined) query = query.where('emails.client_id', '=', clientId);
    const row = await query.executeTakeFirst();
    if (row === undefined) throw errors.notFound('E-mail');
    return toRecord(row);
  }

  return { shown, list, get, forClient };
}
