// The SMTP transport as the settings say at each use (issue 21): `smtp_url` (stored sealed in Settings, or SMTP_URL)
// and `smtp_password` are read when a message leaves, so setting, replacing or clearing them takes effect without a
// restart. One nodemailer pool is kept per (URL, password); a change closes the old pool. nodemailer is loaded with
// the first message, not at every start (issue 13's cold start).
import type { Transporter } from 'nodemailer';

export interface SmtpSettings {
  /** smtp://user:pass@host:587 or smtps://…; null when no mail server is configured. */
  url: string | null;
  /** Replaces the URL's password when set (so the URL can be kept without one). */
  password?: string | null;
}

export interface MailTransport {
  /** Whether a mail server is configured now. */
  configured(): boolean;
  /** The transport for the settings in force now; null when no mail server is configured. */
  current(): Promise<Transporter> | null;
  close(): void;
}

/** nodemailer's options for a URL and password: credentials given apart, so `smtp_password` wins over the URL's. */
export function transportOptions(url: string, password: string | null | undefined, timeoutMs: number): Record<string, unknown> {
  const parsed = new URL(url);
  const user = decodeURIComponent(parsed.username);
  const pass = password ?? decodeURIComponent(parsed.password);
  parsed.username = '';
  parsed.password = '';
  return {
    url: parsed.toString(),
    ...(user !== '' && { auth: { user, pass } }),
    // A few connections kept open and reused: opening one per message cost ~100 ms each even on localhost
    // (measured 39 messages/s without the pool).
    pool: true,
    maxConnections: 5,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  };
}

export function createMailTransport(settings: () => SmtpSettings, timeoutMs: number): MailTransport {
  let open: { key: string; transport: Promise<Transporter> } | null = null;

  function closeOpen(): void {
    const old = open;
    open = null;
    void old?.transport.then((transport) => transport.close()).catch(() => undefined);
  }

  return {
    configured: () => (settings().url ?? '') !== '',
    current() {
      const { url, password = null } = settings();
      if (url === null || url === '') {
        closeOpen();
        return null;
      }
      const key = `${url}\n${password ?? ''}`;
      if (open?.key !== key) {
        closeOpen();
        const options = transportOptions(url, password, timeoutMs);
        open = { key, transport: import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(options)) };
      }
      return open.transport;
    },
    close: closeOpen,
  };
}
