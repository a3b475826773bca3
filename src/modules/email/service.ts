// E-mail (CONTRACT §10): renders a template into a message, writes it with its outbox item in the caller's
// transaction, and delivers it as the outbox's `email` kind — over SMTP through nodemailer when a mail server is
// configured (`smtp_url` in Settings or SMTP_URL, read at each message: transport.ts); otherwise the message waits as
// `not_sent`, the log says "mail to <address>: <subject>", and the admin panel says so (waiting.ts). Every message
// carries the operator's brand (layout.ts). The only writer of `emails` and `email_templates`.
//
// Safety: the recipient's address must be one plain address (no comma, no line break, no display-name syntax) or the
// call is refused; the recipient's name and the subject are put on one line; placeholders are HTML-escaped. Reset and
// confirmation links are sealed (src/lib/crypto.ts) and put into the message only at send time, so neither the
// database nor staff reading the mail log can use them. Each message gets its Message-ID when queued: a message
// sent again after a crash carries the same one.
import { randomBytes } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EmailTable } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { errors } from '../../platform/errors.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { invoiceFileName } from '../../lib/invoice-label.ts';
import type { Page } from '../../lib/paginator.ts';
import { isoSeconds } from '../../lib/time.ts';
import { defaultOutboxLog, OutboxGiveUp, OutboxNotSent, type OutboxLog, type OutboxService } from '../outbox/service.ts';
import { mailLayout, NO_BRAND, senderOf, type MailBrand } from './layout.ts';
import { createMailTransport } from './transport.ts';
import { mailWaiting, NO_MAIL_SERVER } from './waiting.ts';
import { createMailLog } from './mail-log.ts';
import type { ClientEmailRecord, EmailRecord, TemplateRecord } from './types.ts';
import {
  COMMON_VARS,
  escapeHtml,
  isTemplateCode,
  MAIL_TEMPLATE_CODES,
  oneLine,
  placeholdersOf,
  renderTemplate,
  SECRET_MARKER_PATTERN,
  SECRET_VARS,
  TEMPLATE_DEFAULTS,
  TemplateSyntaxError,
  type MailTemplateCode,
  type MailVars,
  type RenderedMail,
} from './templates.ts';


export const EMAIL_KIND = 'email';
/** CONTRACT §10: retries after 1 min, 5 min, 30 min, 2 h and 12 h, then `failed`. */
export const MAIL_RETRY_DELAYS_MS: readonly number[] = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 12 * 3_600_000];

export interface MailMessage {
  template: MailTemplateCode;
  to: { email: string; name?: string };
  clientId?: number | null;
  staffId?: number | null;
  vars: Record<string, string | number>;
  /** Attach this invoice's PDF, rendered when the message is sent (needs the `invoicePdf` dependency). */
  attachInvoicePdf?: number;
  /** At most one message per key (e.g. one reminder per invoice and day); a repeat returns the first message's id. */
  dedupeKey?: string;
}

export interface MailServiceDeps {
  db: Kysely<Database>;
  outbox: Pick<OutboxService, 'enqueue' | 'registerKind' | 'hasDedupeKey' | 'existingDedupeKeys' | 'countUndelivered' | 'releaseNotSent'>;
  secrets: SecretBox;
  /** The mail server's URL, or a function read at each message (the `smtp_url` setting); null: none configured. */
  smtpUrl: string | null | (() => string | null);
  /** The `smtp_password` setting: replaces the URL's password when set. */
  smtpPassword?: () => string | null;
  /** The operator's brand for the sender name and the layout (from the company settings), read in the message's transaction. */
  brand?: (trx: Kysely<Database>) => Promise<MailBrand>;
  mailFrom: string;
  /** PUBLIC_URL, without a trailing slash. */
  publicUrl: string;
  smtpTimeoutMs: number;
  /** Renders an invoice's PDF for the receipt (services.invoices once invoices have PDFs); receipts go without it otherwise. */
  invoicePdf?: { pdf(invoiceId: number): Promise<Buffer> } | undefined;
  log?: OutboxLog;
}

type EmailRow = Selectable<EmailTable>;

const ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

/** One plain address, nothing else: a comma, a line break or a display name would add recipients or headers. */
export function isPlainAddress(address: string): boolean {
  return address.length <= 254 && ADDRESS.test(address);
}

function domainOf(mailFrom: string, publicUrl: string): string {
  const match = /@([A-Za-z0-9.-]+)>?\s*$/.exec(mailFrom);
  return match?.[1] ?? new URL(publicUrl).hostname;
}

interface Attachment {
  type: 'invoice_pdf';
  invoice_id: number;
}

function parseAttachments(text: string): Attachment[] {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? (value as Attachment[]) : [];
  } catch {
    return [];
  }
}

export function createMailService(deps: MailServiceDeps) {
  const { db, outbox, secrets, mailFrom, publicUrl } = deps;
  const log = deps.log ?? defaultOutboxLog;
  const clientAreaUrl = `${publicUrl}/`;
  const messageDomain = domainOf(mailFrom, publicUrl);
  const smtpUrl = deps.smtpUrl;
  const transport = createMailTransport(
    () => ({ url: typeof smtpUrl === 'function' ? smtpUrl() : smtpUrl, password: deps.smtpPassword?.() ?? null }),
    deps.smtpTimeoutMs,
  );
  const brandFor = async (trx: Kysely<Database>): Promise<MailBrand> => (deps.brand === undefined ? NO_BRAND : deps.brand(trx));
  const layoutFor = (brand: MailBrand) => (body: string) => mailLayout(body, brand, clientAreaUrl);

  // ---- templates -------------------------------------------------------------------------------------------------

  async function loadTemplate(trx: Kysely<Database>, code: MailTemplateCode): Promise<TemplateRecord> {
    const row = await trx.selectFrom('email_templates').selectAll().where('code', '=', code).executeTakeFirst();
    const fallback = TEMPLATE_DEFAULTS[code];
    return {
      code,
      title: fallback.title,
      when: fallback.when,
      subject: row?.subject ?? fallback.subject,
      content: row?.content ?? fallback.content,
      enabled: row === undefined ? true : row.enabled === 1,
      customized: row !== undefined,
      required: fallback.required === true,
      vars: { ...COMMON_VARS, ...Object.fromEntries(Object.keys(fallback.vars).map((name) => [name, describeVar(name)])) },
      updated_at: row?.updated_at ?? null,
    };
  }

  function describeVar(name: string): string {
    if (name.endsWith('_url')) return SECRET_VARS.has(name) ? 'A link (hidden in the mail log)' : 'A link';
    return name.replace(/_/g, ' ');
  }

  /** The subject and content a change would leave, refused (422) when they could not render as meant. */
  function checkDraft(current: TemplateRecord, fields: { subject?: string | undefined; content?: string | undefined }): { subject: string; content: string } {
    const subject = fields.subject ?? current.subject;
    const content = fields.content ?? current.content;
    // oxlint-disable-next-line no-control-regex -- a subject is one header line
    if (/[\u0000-\u001f\u007f]/.test(subject)) throw errors.invalid('subject', 'must be one line');
    if (subject.trim() === '') throw errors.invalid('subject', 'must not be empty');
    if (content.trim() === '') throw errors.invalid('content', 'must not be empty');
    for (const [param, text] of [['subject', subject], ['content', content]] as const) {
      let names: Set<string>;
      try {
        names = placeholdersOf(text);
      } catch (error) {
        if (error instanceof TemplateSyntaxError) throw errors.invalid(param, `has a broken section: ${error.message}`);
        throw error;
      }
      for (const name of names) {
        if (!(name in current.vars)) throw errors.invalid(param, `uses {{${name}}}, which this template does not have (it has ${Object.keys(current.vars).join(', ')})`);
      }
    }
    return { subject, content };
  }

  function requireCode(code: string): MailTemplateCode {
    if (!isTemplateCode(code)) throw errors.notFound('Template');
    return code;
  }

  // ---- queueing --------------------------------------------------------------------------------------------------

  function checkRecipient(to: { email: string; name?: string | undefined }): { email: string; name: string | null } {
    if (typeof to.email !== 'string' || !isPlainAddress(to.email)) {
      throw errors.invalid('to', 'must be one e-mail address (no commas, spaces or line breaks)');
    }
    const name = to.name === undefined ? null : oneLine(to.name).slice(0, 255);
    return { email: to.email, name: name === '' ? null : name };
  }

  /** Writes a rendered message and its outbox item in `trx`; returns the message's id. */
  async function insert(
    trx: Kysely<Database>,
    fields: {
      template: string;
      to: { email: string; name: string | null };
      clientId: number | null;
      staffId: number | null;
      rendered: RenderedMail;
      sender: string;
      sealed: string | null;
      attachments: Attachment[];
      dedupeKey?: string | undefined;
    },
  ): Promise<number> {
    const outboxId = await outbox.enqueue(trx, {
      kind: EMAIL_KIND,
      payload: { template: fields.template },
      ...(fields.dedupeKey !== undefined && { dedupeKey: `email:${fields.dedupeKey}` }),
    });
    if (fields.dedupeKey !== undefined) {
      // The key may have been seen before: then the outbox returned that item, whose message exists already.
      const existing = await trx.selectFrom('emails').select('id').where('outbox_id', '=', outboxId).executeTakeFirst();
      if (existing !== undefined) return existing.id;
    }
    const row = await trx
      .insertInto('emails')
      .values({
        outbox_id: outboxId,
        template: fields.template,
        client_id: fields.clientId,
        staff_id: fields.staffId,
        sender: fields.sender,
        to_email: fields.to.email,
        to_name: fields.to.name,
        subject: fields.rendered.subject,
        html: fields.rendered.html,
        text: fields.rendered.text,
        sealed: fields.sealed,
        attachments: JSON.stringify(fields.attachments),
        message_id: `<${randomBytes(16).toString('hex')}@${messageDomain}>`,
        created_at: isoSeconds(new Date()),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /**
   * Queues `message` in the caller's transaction: it is sent only if that transaction commits. Returns the message's
   * id, or 0 when staff switched the template off.
   */
  async function queue(trx: Kysely<Database>, message: MailMessage): Promise<number> {
    const to = checkRecipient(message.to);
    const template = await loadTemplate(trx, message.template);
    if (!template.enabled) return 0;
    const vars: MailVars = { ...message.vars, name: to.name ?? message.vars.name ?? '', client_area_url: clientAreaUrl };
    const brand = await brandFor(trx);
    const secretValues: Record<string, string> = {};
    for (const name of SECRET_VARS) {
      const value = message.vars[name];
      if (value !== undefined && value !== '') secretValues[name] = String(value);
    }
    return insert(trx, {
      template: message.template,
      to,
      clientId: message.clientId ?? null,
      staffId: message.staffId ?? null,
      rendered: renderTemplate(template.subject, template.content, vars, clientAreaUrl, layoutFor(brand)),
      sender: senderOf(mailFrom, brand),
      sealed: Object.keys(secretValues).length === 0 ? null : secrets.encrypt(JSON.stringify(secretValues)),
      attachments: message.attachInvoicePdf === undefined ? [] : [{ type: 'invoice_pdf', invoice_id: message.attachInvoicePdf }],
      dedupeKey: message.dedupeKey,
    });
  }

  // ---- delivery (the outbox's `email` kind) ----------------------------------------------------------------------

  function unsealed(row: EmailRow): { html: string; text: string } {
    const values: Record<string, string> = row.sealed === null ? {} : (JSON.parse(secrets.decrypt(row.sealed)) as Record<string, string>);
    return {
      html: row.html.replace(SECRET_MARKER_PATTERN, (_whole, name: string) => escapeHtml(values[name] ?? '')),
      text: row.text.replace(SECRET_MARKER_PATTERN, (_whole, name: string) => values[name] ?? ''),
    };
  }

  async function attachmentsOf(row: EmailRow): Promise<Array<{ filename: string; content: Buffer; contentType: string }>> {
    const out = [];
    for (const attachment of parseAttachments(row.attachments)) {
      // Without a PDF renderer (invoices without PDFs yet) the receipt goes without its attachment.
      if (attachment.type === 'invoice_pdf' && deps.invoicePdf !== undefined) {
        // Named as the invoice is named everywhere (its number, paid by now), read when the mail leaves.
        const invoice = await db.selectFrom('invoices').select(['id', 'number']).where('id', '=', attachment.invoice_id).executeTakeFirst();
        const filename = invoiceFileName(invoice ?? { id: attachment.invoice_id, number: null });
        out.push({ filename, content: await deps.invoicePdf.pdf(attachment.invoice_id), contentType: 'application/pdf' });
      }
    }
    return out;
  }

  outbox.registerKind(EMAIL_KIND, {
    retryDelaysMs: MAIL_RETRY_DELAYS_MS,
    async deliver(_payload, { id }) {
      const row = await db.selectFrom('emails').selectAll().where('outbox_id', '=', id).executeTakeFirst();
      if (row === undefined) throw new OutboxGiveUp('the message no longer exists');
      const sender = transport.current();
      if (sender === null) {
        log('info', `mail to ${row.to_email}: ${row.subject}`);
        throw new OutboxNotSent(NO_MAIL_SERVER);
      }
      const { html, text } = unsealed(row);
      await (await sender).sendMail({
        from: row.sender,
        to: row.to_name === null ? row.to_email : { name: row.to_name, address: row.to_email },
        subject: row.subject,
        html,
        text,
        messageId: row.message_id,
        attachments: await attachmentsOf(row),
      });
    },
  });

  // ---- reading the log -------------------------------------------------------------------------------------------

  const { shown, list, get, forClient } = createMailLog(db);

  return {
    queue,

    /** Which of these dedupe keys have a message already. */
    async queuedKeys(dedupeKeys: readonly string[]): Promise<Set<string>> {
      const found = await outbox.existingDedupeKeys(dedupeKeys.map((key) => `email:${key}`));
      return new Set(dedupeKeys.filter((key) => found.has(`email:${key}`)));
    },

    /** Whether a message with this dedupe key was queued already. */
    async isQueued(trx: Kysely<Database>, dedupeKey: string): Promise<boolean> {
      return outbox.hasDedupeKey(trx, `email:${dedupeKey}`);
    },

    /** The mail log for staff: newest first, by client and delivery status. */
    list,
    get: (id: number): Promise<EmailRecord> => get(id),

    /** The caller's own mail. */
    async listForClient(clientId: number, params: { page?: number | undefined; per_page?: number | undefined }): Promise<Page<ClientEmailRecord>> {
      const page = await list({ ...params, client_id: clientId });
      return { ...page, list: page.list.map(forClient) };
    },
    async getForClient(id: number, clientId: number): Promise<ClientEmailRecord> {
      return forClient(await get(id, clientId));
    },

    /** Sends a logged message again, as a new message (new Message-ID) beside the original; returns its id. */
    async resend(id: number): Promise<number> {
      return inTransaction(db, async (trx) => {
        const row = await trx.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirst();
        if (row === undefined) throw errors.notFound('E-mail');
        return insert(trx, {
          template: row.template,
          to: { email: row.to_email, name: row.to_name },
          clientId: row.client_id,
          staffId: row.staff_id,
          rendered: { subject: row.subject, html: row.html, text: row.text },
          sender: row.sender,
          sealed: row.sealed,
          attachments: parseAttachments(row.attachments),
        });
      });
    },

    /** A short message to `to` that shows whether delivery works; returns its id. */
    async sendTest(to: string, staffId: number): Promise<number> {
      const recipient = checkRecipient({ email: to });
      return inTransaction(db, async (trx) => {
        const brand = await brandFor(trx);
        const rendered = renderTemplate(
          `Test message from ${brand.name ?? new URL(publicUrl).hostname}`,
          '<p>This is a test message sent from the admin panel. If you can read it, e-mail delivery works.</p>',
          {},
          clientAreaUrl,
          layoutFor(brand),
        );
        return insert(trx, { template: 'test', to: recipient, clientId: null, staffId, rendered, sender: senderOf(mailFrom, brand), sealed: null, attachments: [] });
      });
    },

    async templates(): Promise<TemplateRecord[]> {
      return Promise.all(MAIL_TEMPLATE_CODES.map((code) => loadTemplate(db, code)));
    },

    async template(code: string): Promise<TemplateRecord> {
      return loadTemplate(db, requireCode(code));
    },

    /** Replaces a template's subject and content and switches it on or off. */
    async updateTemplate(code: string, fields: { subject?: string | undefined; content?: string | undefined; enabled?: boolean | undefined }): Promise<void> {
      const current = await loadTemplate(db, requireCode(code));
      const { subject, content } = checkDraft(current, fields);
      const enabled = fields.enabled ?? current.enabled;
      if (!enabled && current.required) throw errors.conflict('This message is needed to reset passwords or confirm addresses; it cannot be switched off');
      const now = isoSeconds(new Date());
      await db
        .insertInto('email_templates')
        .values({ code: current.code, subject, content, enabled: enabled ? 1 : 0, updated_at: now })
        .onConflict((conflict) => conflict.column('code').doUpdateSet({ subject, content, enabled: enabled ? 1 : 0, updated_at: now }))
        .execute();
    },

    /** A preview with sample values (of a draft subject and content when given); links point at PUBLIC_URL. */
    async renderSample(code: string, draft: { subject?: string | undefined; content?: string | undefined } = {}): Promise<{ subject: string; html: string; text: string }> {
      const stored = await loadTemplate(db, requireCode(code));
      const template = { ...stored, ...checkDraft(stored, draft) };
      const samples: MailVars = { ...TEMPLATE_DEFAULTS[template.code].vars, name: 'Jane Doe', client_area_url: clientAreaUrl };
      for (const [name, value] of Object.entries(samples)) {
        if (typeof value === 'string') samples[name] = value.replace('https://billing.example.com', publicUrl);
      }
      const rendered = renderTemplate(template.subject, template.content, samples, clientAreaUrl, layoutFor(await brandFor(db)));
      return { subject: rendered.subject, html: shown(rendered.html), text: shown(rendered.text) };
    },

    /** Closes the SMTP transport (after the outbox loop has stopped). */
    close(): void {
      transport.close();
    },

    /** The admin panel's banner: whether a mail server is configured, and how many messages wait for one. */
    ...mailWaiting({ outbox, configured: () => transport.configured() }),
  };
}

export type MailService = ReturnType<typeof createMailService>;
