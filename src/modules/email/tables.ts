// Tables of the e-mail module (migration 008): each message as rendered (its delivery is an outbox message) and the
// templates an operator edited. Only this module writes them.
import type { Generated } from 'kysely';

export interface EmailTable {
  id: Generated<number>;
  outbox_id: number;
  template: string;
  client_id: number | null;
  staff_id: number | null;
  sender: string;
  to_email: string;
  to_name: string | null;
  subject: string;
  html: string;
  text: string;
  /** Sealed JSON object of secret link values (see the migration); null when the message has none. */
  sealed: string | null;
  /** JSON array of attachments rendered at send time. */
  attachments: Generated<string>;
  message_id: string;
  created_at: string;
}

export interface EmailTemplateTable {
  code: string;
  subject: string;
  content: string;
  enabled: number;
  updated_at: string;
}

export interface EmailTables {
  emails: EmailTable;
  email_templates: EmailTemplateTable;
}
