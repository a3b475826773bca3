// The email module's result schemas (CONTRACT §11): the mail log (EmailRecord, and the client's ClientEmailRecord)
// and the templates (TemplateRecord), as src/modules/email/service.ts builds them.
import { Type } from '@sinclair/typebox';
import { Nullable, Timestamp } from '../../platform/schemas.ts';
import { MAIL_TEMPLATE_CODES } from './templates.ts';

const Status = Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed'), Type.Literal('not_sent')], {
  description: '`not_sent`: set aside without sending (e.g. the template is off)',
});

/** The fields a client sees of its own messages (no delivery internals). */
const clientFields = {
  id: Type.Integer(),
  template: Type.String({ description: 'The template code it was made from (`test` for a test message)' }),
  sender: Type.String(),
  recipients: Type.String(),
  subject: Type.String(),
  content_html: Type.String({ description: 'Secret links are shown as "[link hidden]"' }),
  content_text: Type.String(),
  status: Status,
  created_at: Timestamp,
  sent_at: Nullable(Timestamp),
  updated_at: Timestamp,
};

export const ClientEmail = Type.Object(clientFields, { $id: 'ClientEmail' });

export const Email = Type.Object(
  {
    ...clientFields,
    client_id: Nullable(Type.Integer()),
    staff_id: Nullable(Type.Integer()),
    to_name: Nullable(Type.String()),
    attempts: Type.Integer({ minimum: 0 }),
    last_error: Nullable(Type.String()),
    message_id: Type.String({ description: 'The Message-ID header' }),
    next_attempt_at: Nullable(Timestamp),
  },
  { $id: 'Email' },
);

export const EmailTemplate = Type.Object(
  {
    code: Type.Union(MAIL_TEMPLATE_CODES.map((code) => Type.Literal(code))),
    title: Type.String(),
    when: Type.String({ description: 'When it is sent' }),
    subject: Type.String(),
    content: Type.String({ description: 'HTML with {{placeholders}} and {{#name}}…{{/name}} sections' }),
    enabled: Type.Boolean(),
    customized: Type.Boolean({ description: 'Staff changed it (false: the default text)' }),
    required: Type.Boolean({ description: 'It may not be switched off (account-security messages)' }),
    vars: Type.Object({}, { additionalProperties: Type.String(), description: 'Placeholders it may use, with what they hold' }),
    updated_at: Nullable(Timestamp),
  },
  { $id: 'EmailTemplate' },
);

export const RenderedEmail = Type.Object({ subject: Type.String(), html: Type.String(), text: Type.String() });
