// Mail templates: the default text of every message Tollgate sends (CONTRACT §10), and the small renderer that fills
// them. Staff may replace a template's subject and content (stored in `email_templates`); a code without a stored row
// uses the default here. Content is HTML with `{{name}}` placeholders, HTML-escaped when filled, and sections
// `{{#name}}…{{/name}}` (shown when the value is not empty) and `{{^name}}…{{/name}}` (shown when it is). The text part
// is derived from the rendered HTML, so staff edit one thing.

export const MAIL_TEMPLATE_CODES = [
  'client_signup',
  'client_password_reset',
  'client_password_changed',
  'client_email_change',
  'staff_password_reset',
  'invoice_created',
  'invoice_paid',
  'invoice_payment_failed',
  'invoice_payment_refunded',
  'invoice_reminder',
  'order_activated',
  'order_renewal_reminder',
  'order_trial_will_end',
  'order_suspended',
  'order_canceled',
  'apikey_reset',
  'apikey_disabled',
  'usage_threshold',
  'wallet_low_balance',
  'email_change_address_taken',
  'staff_email_change',
  'staff_email_changed',
  'second_factor_locked',
] as const;

export type MailTemplateCode = (typeof MAIL_TEMPLATE_CODES)[number];

export function isTemplateCode(code: string): code is MailTemplateCode {
  return (MAIL_TEMPLATE_CODES as readonly string[]).includes(code);
}

/**
 * Values that would let whoever reads them act as the recipient (reset and confirmation links). They are never
 * stored readable: the stored message holds a marker, the value is sealed, and it is put in only at send time.
 */
export const SECRET_VARS: ReadonlySet<string> = new Set(['reset_url', 'verify_url', 'confirm_url']);

/** Variables every message gets: the recipient's name and the client area's address (from PUBLIC_URL). */
export const COMMON_VARS: Readonly<Record<string, string>> = {
  name: 'The recipient’s name',
  client_area_url: 'The client area (PUBLIC_URL)',
};

export interface TemplateDefault {
  title: string;
  /** When the message is sent. */
  when: string;
  subject: string;
  content: string;
  /** The template's own variables (besides COMMON_VARS), with a sample value used by the preview. */
  vars: Readonly<Record<string, string>>;
  /** Account-security messages cannot be switched off: without them nobody could reset a password. */
  required?: boolean;
}

// `invoice` is the invoice's one name (src/lib/invoice-label.ts): "Invoice NWD-4" once paid, "Pro forma 42" before;
// `invoice_number` is the number once there is one, else that same pro forma label — never a bare id.
const INVOICE_SAMPLE = { invoice: 'Pro forma 42', invoice_number: 'Pro forma 42', invoice_total: '10.00 USD', invoice_url: 'https://billing.example.com/invoices/42' };
const PAID_SAMPLE = { ...INVOICE_SAMPLE, invoice: 'Invoice INV-7', invoice_number: 'INV-7' };
const ORDER_SAMPLE = { order_title: 'Pro plan', order_url: 'https://billing.example.com/orders' };

export const TEMPLATE_DEFAULTS: Readonly<Record<MailTemplateCode, TemplateDefault>> = {
  client_signup: {
    title: 'Welcome',
    when: 'A client signs up (with the confirmation link when e-mail verification is required)',
    subject: 'Welcome to your account',
    content:
      '<p>Hello {{name}},</p><p>your account is ready. You can log in at <a href="{{login_url}}">{{login_url}}</a>.</p>' +
      '{{#verify_url}}<p>Please confirm your e-mail address: <a href="{{verify_url}}">confirm my address</a>.</p>{{/verify_url}}',
    vars: { login_url: 'https://billing.example.com/login', verify_url: 'https://billing.example.com/#/confirm/SAMPLE' },
  },
  client_password_reset: {
    title: 'Password reset',
    when: 'A client asks to reset the password',
    subject: 'Reset your password',
    content:
      '<p>Hello {{name}},</p><p>someone asked to reset the password of your account. To choose a new one, open ' +
      '<a href="{{reset_url}}">this link</a> within {{expires_minutes}} minutes.</p>' +
      '<p>If it was not you, ignore this message: your password stays as it is.</p>',
    vars: { reset_url: 'https://billing.example.com/#/reset/SAMPLE', expires_minutes: '30' },
    required: true,
  },
  client_password_changed: {
    title: 'Password changed',
    when: 'A client’s password was changed',
    subject: 'Your password was changed',
    content:
      '<p>Hello {{name}},</p><p>the password of your account was just changed and your other sessions were ended.</p>' +
      '<p>If you did not do this, reset your password at once from <a href="{{login_url}}">the login page</a>.</p>',
    vars: { login_url: 'https://billing.example.com/login' },
  },
  client_email_change: {
    title: 'Confirm a new e-mail address',
    when: 'A client asks to change the account’s e-mail address (sent to the new address)',
    subject: 'Confirm your new e-mail address',
    content:
      '<p>Hello {{name}},</p><p>to use {{new_email}} for your account, <a href="{{confirm_url}}">confirm this address</a>.</p>' +
      '<p>If you did not ask for this, ignore this message.</p>',
    vars: { confirm_url: 'https://billing.example.com/#/confirm-email/SAMPLE', new_email: 'new@example.com' },
    required: true,
  },
  staff_password_reset: {
    title: 'Staff password reset',
    when: 'A staff member asks to reset the password',
    subject: 'Reset your staff password',
    content:
      '<p>Hello {{name}},</p><p>to choose a new password for the admin panel, open <a href="{{reset_url}}">this link</a> ' +
      'within {{expires_minutes}} minutes.</p><p>If it was not you, ignore this message.</p>',
    vars: { reset_url: 'https://billing.example.com/admin#/reset/SAMPLE', expires_minutes: '30' },
    required: true,
  },
  invoice_created: {
    title: 'New invoice',
    when: 'An invoice is issued (new orders; renewals send the renewal reminder instead)',
    subject: '{{invoice}}: {{invoice_total}}',
    content:
      '<p>Hello {{name}},</p><p>{{invoice}} for {{invoice_total}} is due on {{invoice_due}}.</p>' +
      '<p><a href="{{invoice_url}}">View and pay the invoice</a></p>',
    vars: { ...INVOICE_SAMPLE, invoice_due: '2026-12-01' },
  },
  invoice_paid: {
    title: 'Receipt',
    when: 'An invoice is paid (the invoice PDF is attached)',
    subject: 'Receipt: {{invoice}}',
    content:
      '<p>Hello {{name}},</p><p>thank you: we received your payment of {{invoice_total}} for {{invoice}}.</p>' +
      '<p><a href="{{invoice_url}}">See the invoice</a></p>',
    vars: PAID_SAMPLE,
  },
  invoice_payment_failed: {
    title: 'Payment failed',
    when: 'An automatic card payment of an invoice failed',
    subject: 'Payment of {{invoice}} failed',
    content:
      '<p>Hello {{name}},</p><p>we could not charge {{invoice_total}} for {{invoice}}: {{message}}</p>' +
      '<p><a href="{{invoice_url}}">Pay the invoice</a> to keep your service running.</p>',
    vars: { ...INVOICE_SAMPLE, message: 'Your card was declined.' },
  },
  invoice_payment_refunded: {
    title: 'Payment refunded',
    when: 'A card payment arrived for an invoice that no longer applied (voided, canceled, already paid) and was refunded',
    subject: 'Your payment for {{invoice}} was refunded',
    content:
      '<p>Hello {{name}},</p><p>your payment of {{amount}} for {{invoice}} arrived after the invoice no ' +
      'longer applied (it had lapsed, been canceled or already been paid), so it bought nothing. We have refunded it ' +
      'in full to the card it came from; banks usually show a refund within 5–10 days.</p>' +
      '<p><a href="{{invoice_url}}">See the invoice</a></p>',
    vars: { ...INVOICE_SAMPLE, amount: '10.00 USD' },
  },
  invoice_reminder: {
    title: 'Payment reminder',
    when: 'Daily while an unpaid invoice is due within 3 days or overdue (at most once a day per invoice)',
    subject: '{{#overdue}}Overdue: {{/overdue}}{{invoice}}',
    content:
      '<p>Hello {{name}},</p>' +
      '{{#overdue}}<p>{{invoice}} for {{invoice_total}} was due on {{invoice_due}} and is still unpaid.</p>{{/overdue}}' +
      '{{^overdue}}<p>{{invoice}} for {{invoice_total}} is due on {{invoice_due}}.</p>{{/overdue}}' +
      '<p><a href="{{invoice_url}}">Pay the invoice</a></p>',
    vars: { ...INVOICE_SAMPLE, invoice_due: '2026-12-01', overdue: '' },
  },
  order_activated: {
    title: 'Order active',
    when: 'An order is activated (for API-key plans: the key is ready; the message never contains the key)',
    subject: '{{order_title}} is active',
    content:
      '<p>Hello {{name}},</p><p>your order {{order_title}} is active.</p>' +
      '{{#keys_url}}<p>Your API key is ready: <a href="{{keys_url}}">see it in the client area</a>.</p>{{/keys_url}}' +
      '{{^keys_url}}<p><a href="{{order_url}}">See your orders</a></p>{{/keys_url}}',
    vars: { ...ORDER_SAMPLE, keys_url: 'https://billing.example.com/keys' },
  },
  order_renewal_reminder: {
    title: 'Renewal reminder',
    when: 'A renewal invoice is issued before a recurrent order expires',
    subject: '{{order_title}} renews on {{expires_at}}',
    content:
      '<p>Hello {{name}},</p><p>your order {{order_title}} expires on {{expires_at}}. To keep it, pay ' +
      '{{invoice}} for {{invoice_total}}.</p><p><a href="{{invoice_url}}">Pay the renewal</a></p>',
    vars: { ...ORDER_SAMPLE, ...INVOICE_SAMPLE, expires_at: '2026-12-01' },
  },
  order_trial_will_end: {
    title: 'Free trial ending',
    when: 'Three days before a free trial ends (once per order)',
    subject: 'Your free trial of {{order_title}} ends on {{trial_ends_at}}',
    content:
      '<p>Hello {{name}},</p><p>your free trial of {{order_title}} ends on {{trial_ends_at}}. Then the first ' +
      'invoice is issued: with auto-pay on, your saved card is charged; otherwise pay it to keep your plan (until ' +
      'it is paid, your API key stops). To stop instead, cancel the order before that day; nothing is charged.</p>' +
      '<p><a href="{{order_url}}">See your orders</a></p>',
    vars: { ...ORDER_SAMPLE, trial_ends_at: '2026-12-01' },
  },
  order_suspended: {
    title: 'Order suspended',
    when: 'An order is suspended (by staff, or at expiry for non-payment)',
    subject: '{{order_title}} is suspended',
    content:
      '<p>Hello {{name}},</p><p>your order {{order_title}} is suspended{{#reason}} ({{reason}}){{/reason}}.</p>' +
      '<p><a href="{{order_url}}">See your orders</a></p>',
    vars: { ...ORDER_SAMPLE, reason: 'Non-payment' },
  },
  order_canceled: {
    title: 'Order canceled',
    when: 'An order is canceled',
    subject: '{{order_title}} is canceled',
    content:
      '<p>Hello {{name}},</p><p>your order {{order_title}} is canceled{{#reason}} ({{reason}}){{/reason}}.</p>' +
      '<p><a href="{{order_url}}">See your orders</a></p>',
    vars: { ...ORDER_SAMPLE, reason: 'Canceled at the client’s request' },
  },
  apikey_reset: {
    title: 'API key replaced',
    when: 'An API key is reset (a security notice; the new key is never in the message)',
    subject: 'The API key of {{order_title}} was replaced',
    content:
      '<p>Hello {{name}},</p><p>the API key of {{order_title}} was replaced; the old key no longer works.</p>' +
      '<p><a href="{{keys_url}}">See your keys</a>. If you did not expect this, contact us.</p>',
    vars: { order_title: 'Pro plan', keys_url: 'https://billing.example.com/keys' },
  },
  apikey_disabled: {
    title: 'API key disabled',
    when: 'Staff disable an API key',
    subject: 'The API key of {{order_title}} was disabled',
    content:
      '<p>Hello {{name}},</p><p>the API key of {{order_title}} was disabled and no longer works.</p>' +
      '<p><a href="{{keys_url}}">See your keys</a></p>',
    vars: { order_title: 'Pro plan', keys_url: 'https://billing.example.com/keys' },
  },
  usage_threshold: {
    title: 'Usage threshold',
    when: 'A meter of an order reaches one of its alert percentages of the included units (80% and 100% by default, each once per usage period)',
    subject: '{{order_title}}: {{threshold}}% of the included {{meter_name}}',
    content:
      '<p>Hello {{name}},</p><p>{{order_title}} has used {{used}} of the {{included}} {{unit}} included in this period ' +
      'for {{meter_name}} ({{threshold}}%).</p><p><a href="{{keys_url}}">See the usage</a></p>',
    vars: { order_title: 'Pro plan', meter_name: 'Calls', unit: 'calls', threshold: '80', used: '800', included: '1000', keys_url: 'https://billing.example.com/keys' },
  },
  wallet_low_balance: {
    title: 'Low balance',
    when: "A payment from the balance takes it below the client's low-balance alert amount (once each time it falls below)",
    subject: 'Your balance is below {{threshold}}',
    content:
      '<p>Hello {{name}},</p><p>your prepaid balance is now {{balance}}, below the {{threshold}} you asked to be told about.</p>' +
      '<p><a href="{{wallet_url}}">Add funds</a></p>',
    vars: { balance: '1.50 USD', threshold: '2.00 USD', wallet_url: 'https://billing.example.com/wallet' },
  },
  // Issue 20: the account findings. A change of e-mail to an address another account holds answers the requester as a
  // free one would (L3); the truth goes to the address itself, which its owner reads, with no link.
  email_change_address_taken: {
    title: 'E-mail address already in use',
    when: 'Someone asks to move an account to an address another account already uses (sent to that address)',
    subject: 'This address already has an account',
    content:
      '<p>Hello{{#name}} {{name}}{{/name}},</p><p>someone asked to use {{new_email}} for an account, but this address already belongs to an account ' +
      'here, so nothing was changed.</p><p>If it was you, sign in with this address instead. Otherwise ignore this message.</p>',
    vars: { new_email: 'new@example.com' },
    required: true,
  },
  staff_email_change: {
    title: 'Confirm a new staff e-mail address',
    when: 'A staff member asks to change their e-mail address (sent to the new address)',
    subject: 'Confirm your new staff e-mail address',
    content:
      '<p>Hello {{name}},</p><p>to use {{new_email}} for the admin panel, <a href="{{confirm_url}}">confirm this address</a>.</p>' +
      '<p>If you did not ask for this, ignore this message.</p>',
    vars: { confirm_url: 'https://billing.example.com/admin#/confirm-email/SAMPLE', new_email: 'new@example.com' },
    required: true,
  },
  staff_email_changed: {
    title: 'Staff e-mail address changed',
    when: 'A staff member’s e-mail address was changed (sent to the old address)',
    subject: 'Your staff e-mail address was changed',
    content:
      '<p>Hello {{name}},</p><p>the e-mail address of your admin panel account was changed to {{new_email}}; mail for the ' +
      'account now goes there.</p><p>If you did not do this, tell another administrator at once.</p>',
    vars: { new_email: 'new@example.com' },
    required: true,
  },
  second_factor_locked: {
    title: 'Two-factor login locked',
    when: 'Ten wrong two-factor codes were tried on an account within 15 minutes (once per lock)',
    subject: 'Too many wrong two-factor codes',
    content:
      '<p>Hello {{name}},</p><p>{{failures}} wrong two-factor codes were tried on your account, so two-factor codes are not ' +
      'accepted until {{locked_until}} (UTC).</p><p>Whoever tried them knew your password: if it was not you, change ' +
      'your password now.</p>',
    vars: { failures: '10', locked_until: '2026-11-22 10:15' },
    required: true,
  },
};

export type MailVars = Record<string, string | number>;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

/** Header text on one line: control characters (CR, LF, tab, NUL…) become spaces, so nothing can start a new header. */
export function oneLine(text: string): string {
  // oxlint-disable-next-line no-control-regex -- control characters are exactly what this removes
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
}

/** The placeholder standing for a secret value in a stored message (replaced at send time). */
export function secretMarker(name: string): string {
  return `[[tollgate-secret:${name}]]`;
}

export const HIDDEN_SECRET = '[link hidden]';
export const SECRET_MARKER_PATTERN = /\[\[tollgate-secret:([a-z_]+)\]\]/g;

const TOKEN = /\{\{\s*([#^/]?)\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g;

export class TemplateSyntaxError extends Error {}

/** The names a template text uses (placeholders and sections); throws TemplateSyntaxError on unbalanced sections. */
export function placeholdersOf(text: string): Set<string> {
  const names = new Set<string>();
  const open: string[] = [];
  for (const match of text.matchAll(TOKEN)) {
    const [, sigil, name] = match as unknown as [string, string, string];
    names.add(name);
    if (sigil === '#' || sigil === '^') open.push(name);
    else if (sigil === '/') {
      if (open.pop() !== name) throw new TemplateSyntaxError(`the section {{/${name}}} closes nothing open`);
    }
  }
  if (open.length > 0) throw new TemplateSyntaxError(`the section {{#${open.at(-1)}}} is never closed`);
  return names;
}

function truthy(value: string | number | undefined): boolean {
  return value !== undefined && value !== '' && value !== 0 && value !== '0';
}

/**
 * Fills `text`. `fill` turns a value into output (escaped for HTML, one line for a subject); sections are resolved
 * first, innermost last, by repeatedly replacing the outermost pairs.
 */
function fillTemplate(text: string, vars: MailVars, fill: (name: string, value: string) => string): string {
  let out = text;
  const section = /\{\{\s*([#^])\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}([\s\S]*?)\{\{\s*\/\s*\2\s*\}\}/;
  for (let guard = 0; guard < 1000; guard++) {
    const match = section.exec(out);
    if (match === null) break;
    const [whole, sigil, name, body] = match as unknown as [string, string, string, string];
    const show = sigil === '#' ? truthy(vars[name]) : !truthy(vars[name]);
    out = out.slice(0, match.index) + (show ? body : '') + out.slice(match.index + whole.length);
  }
  return out.replace(TOKEN, (_whole, sigil: string, name: string) => (sigil === '' ? fill(name, String(vars[name] ?? '')) : ''));
}

export interface RenderedMail {
  subject: string;
  html: string;
  text: string;
}

/**
 * Renders a template. Secret variables become markers (see SECRET_VARS); everything else is filled in, HTML-escaped
 * in the body and on one line in the subject.
 */
export function renderTemplate(
  subject: string,
  content: string,
  vars: MailVars,
  clientAreaUrl: string,
  /** The whole message around the body (the operator's brand: email/layout.ts). */
  layout: (body: string) => string = (body) => defaultLayout(body, clientAreaUrl),
): RenderedMail {
  const inBody = (name: string, value: string): string => (SECRET_VARS.has(name) ? secretMarker(name) : escapeHtml(value));
  const inSubject = (name: string, value: string): string => (SECRET_VARS.has(name) ? HIDDEN_SECRET : value);
  const html = layout(fillTemplate(content, vars, inBody));
  return { subject: oneLine(fillTemplate(subject, vars, inSubject)).slice(0, 998), html, text: htmlToText(html) };
}

/** The message without a brand: the body and the link to the client area. */
function defaultLayout(body: string, clientAreaUrl: string): string {
  return (
    '<!doctype html><html><body style="font-family: sans-serif; line-height: 1.5; color: #222;">' +
    body +
    `<hr><p style="font-size: 0.9em; color: #555;"><a href="${escapeHtml(clientAreaUrl)}">Your client area</a></p></body></html>`
  );
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, entity: string) => {
    if (entity[0] === '#') {
      const code = entity[1] === 'x' || entity[1] === 'X' ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[entity.toLowerCase()] ?? whole;
  });
}

/** The text part of a message: links written out as "label: URL", block ends as line breaks, tags dropped. */
export function htmlToText(html: string): string {
  let text = html
    // Bounded lazy matches: an opening tag without its end costs at most a bounded scan, not one to the end of the text.
    .replace(/<(script|style|head|title)\b[\s\S]{0,20000}?<\/\1\s*>/gi, '')
    .replace(/<a\b[^>]{0,2000}?\bhref\s*=\s*("([^"]{0,2000})"|'([^']{0,2000})')[^>]{0,2000}>([\s\S]{0,2000}?)<\/a\s*>/gi, (_whole, _quoted, dq?: string, sq?: string, label = '') => {
      // Still entity-encoded here: the whole text is decoded once, after the tags are gone.
      const url = dq ?? sq ?? '';
      const shown = label.replace(/<[^>]*>/g, '').trim();
      return shown === '' || shown === url ? url : `${shown}: ${url}`;
    })
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<hr\b[^>]*>/gi, '\n\n---\n\n')
    .replace(/<li\b[^>]*>/gi, '\n- ')
    .replace(/<\/(p|div|h[1-6]|ul|ol|table|tr|blockquote)\s*>/gi, '\n\n')
    .replace(/<[^>]*>/g, '');
  text = decodeEntities(text);
  return text
    .split('\n')
    .map((line) => line.replace(/[ \t]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
