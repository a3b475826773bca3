// email: the mail log and the templates for staff (CONTRACT §10), and each client's own messages.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { paginationParams } from '../../lib/paginator.ts';
import { Done, PageOf } from '../../platform/schemas.ts';
import { ClientEmail, Email, EmailTemplate, RenderedEmail } from './results.ts';
import type { MailService } from './service.ts';

/** The services this module's actions use. */
export interface EmailNeeds {
  mail: Pick<
    MailService,
    | 'list'
    | 'get'
    | 'resend'
    | 'templates'
    | 'template'
    | 'updateTemplate'
    | 'renderSample'
    | 'sendTest'
    | 'deliveryStatus'
    | 'listForClient'
    | 'getForClient'
  >;
}

const { adminAction, clientAction } = actionsFor<EmailNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const ById = Type.Object({ id: Id });
const Status = Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed'), Type.Literal('not_sent')]);
const Code = Type.String({ minLength: 1, maxLength: 64 });
const Subject = Type.String({ minLength: 1, maxLength: 998 });
const Content = Type.String({ minLength: 1, maxLength: 20_000 });

export const emailApi: ModuleApi<EmailNeeds> = {
  name: 'email',
  admin: {
    email_get_list: adminAction({
      params: Type.Object({ client_id: Type.Optional(Id), status: Type.Optional(Status), ...paginationParams }),
      permission: 'email.view',
      summary: 'The mail log, newest first: sent, pending, failed and not_sent messages',
      result: PageOf(Email),
      handler: (params, { services }) => services.mail.list(params),
    }),
    email_get: adminAction({
      params: ById,
      permission: 'email.view',
      summary: 'One logged message with its delivery state',
      result: Email,
      handler: ({ id }, { services }) => services.mail.get(id),
    }),
    email_resend: adminAction({
      params: ById,
      permission: 'email.manage',
      summary: 'Sends a logged message again, as a new message; returns its id',
      result: Type.Integer({ description: 'The new message id' }),
      handler: ({ id }, { services }) => services.mail.resend(id),
    }),
    template_get_list: adminAction({
      params: Type.Object({}),
      permission: 'email.view',
      summary: 'Every template: when it is sent, its subject and content, whether it is on',
      result: Type.Array(EmailTemplate),
      handler: (_params, { services }) => services.mail.templates(),
    }),
    template_get: adminAction({
      params: Type.Object({ code: Code }),
      permission: 'email.view',
      summary: 'One template by its code, with the placeholders it may use',
      result: EmailTemplate,
      handler: ({ code }, { services }) => services.mail.template(code),
    }),
    template_update: adminAction({
      params: Type.Object({
        code: Code,
        subject: Type.Optional(Subject),
        content: Type.Optional(Content),
        enabled: Type.Optional(Type.Boolean()),
      }),
      permission: 'email.manage',
      summary: 'Replaces a template’s subject and content ({{placeholders}} it has) and switches it on or off',
      result: Done,
      async handler({ code, ...fields }, { services }) {
        await services.mail.updateTemplate(code, fields);
        return true;
      },
    }),
    template_render: adminAction({
      params: Type.Object({ code: Code, subject: Type.Optional(Subject), content: Type.Optional(Content) }),
      permission: 'email.view',
      summary: 'A preview with sample values: {subject, html, text}; of an unsaved draft when subject or content is given',
      result: RenderedEmail,
      handler: ({ code, ...draft }, { services }) => services.mail.renderSample(code, draft),
    }),
    delivery_status: adminAction({
      params: Type.Object({}),
      permission: 'email.view',
      summary:
        'Whether a mail server is configured (smtp_url in Settings, or SMTP_URL) and how many messages wait: the admin panel shows "N messages waiting: no mail server is configured" while there is none',
      result: Type.Object({
        smtp_configured: Type.Boolean(),
        waiting: Type.Integer({ minimum: 0, description: 'Messages not sent yet (waiting for a mail server, or queued)' }),
      }),
      handler: (_params, { services }) => services.mail.deliveryStatus(),
    }),
    send_test: adminAction({
      params: Type.Object({ to: Type.String({ minLength: 3, maxLength: 254 }) }),
      permission: 'email.manage',
      summary: 'Queues a test message to `to`; returns its id (its status shows whether delivery works)',
      result: Type.Integer({ description: 'The test message id' }),
      handler: ({ to }, { services, identity }) => services.mail.sendTest(to, identity.staff.id),
    }),
  },
  client: {
    get_list: clientAction({
      params: Type.Object({ ...paginationParams }),
      summary: 'The messages sent to the caller, newest first',
      result: PageOf(ClientEmail),
      handler: (params, { services, identity }) => services.mail.listForClient(identity.client.id, params),
    }),
    get: clientAction({
      params: ById,
      summary: 'One message sent to the caller',
      result: ClientEmail,
      handler: ({ id }, { services, identity }) => services.mail.getForClient(id, identity.client.id),
    }),
  },
};
