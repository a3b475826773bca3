// The records the e-mail module hands out: the mail log's messages (staff's and the client's view) and the templates.
// Apart from service.ts so that mail-log.ts, which builds the log records, and service.ts need not import each other.
import type { OutboxStatus } from '../outbox/types.ts';
import type { MailTemplateCode } from './templates.ts';

export interface EmailRecord {
  id: number;
  client_id: number | null;
  staff_id: number | null;
  template: string;
  sender: string;
  recipients: string;
  to_name: string | null;
  subject: string;
  content_html: string;
  content_text: string;
  status: OutboxStatus;
  attempts: number;
  last_error: string | null;
  message_id: string;
  /** When the next attempt is due (pending messages only). */
  next_attempt_at: string | null;
  created_at: string;
  /** When it was sent, given up or set aside. */
  sent_at: string | null;
  /** When its delivery state last changed. */
  updated_at: string;
}

/** What a client sees of their own mail: no delivery internals. */
export type ClientEmailRecord = Pick<EmailRecord, 'id' | 'template' | 'sender' | 'recipients' | 'subject' | 'content_html' | 'content_text' | 'status' | 'created_at' | 'sent_at' | 'updated_at'>;

export interface TemplateRecord {
  code: MailTemplateCode;
  title: string;
  when: string;
  subject: string;
  content: string;
  enabled: boolean;
  /** Whether staff changed it (false: the default text). */
  customized: boolean;
  /** May it be switched off (account-security messages may not). */
  required: boolean;
  /** Placeholders it may use, with what they hold. */
  vars: Record<string, string>;
  updated_at: string | null;
}
