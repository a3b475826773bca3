// Reading the links Tollgate mails, for the account security tests: the outbox is delivered to a real SMTP server
// (TestSmtp) and each link is read from the delivered message, in its HTML and its text part.
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import type { ReceivedMail, TestSmtp } from './smtp.ts';

export class Mailbox {
  constructor(
    private readonly t: TestApp,
    private readonly smtp: TestSmtp,
    private readonly publicUrl: string,
  ) {}

  /** Every message delivered so far to `address`, after delivering the outbox. */
  async to(address: string): Promise<ReceivedMail[]> {
    await this.t.services.outbox.runDue();
    return this.smtp.received.filter((mail) => mail.envelope.to.includes(address.toLowerCase()));
  }

  /** The last message to `address`. */
  async last(address: string): Promise<ReceivedMail> {
    const mails = await this.to(address);
    expect(mails.length, `mails to ${address}`).toBeGreaterThan(0);
    return mails.at(-1)!;
  }

  /** The token of a link `<PUBLIC_URL><path>#/<route>/<token>` in a message, or null when it has none. */
  linkIn(mail: ReceivedMail, path: '/' | '/admin', route: 'reset' | 'confirm-email'): string | null {
    const prefix = `${this.publicUrl}${path}#/${route}/`.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const pattern = new RegExp(`${prefix}([A-Za-z0-9_-]{43})`);
    const inHtml = pattern.exec(String(mail.parsed.html));
    const inText = pattern.exec(mail.parsed.text ?? '');
    expect(inText?.[1]).toBe(inHtml?.[1]);
    return inHtml?.[1] ?? null;
  }

  /** The token of the link in the last message to `address`; fails when there is none. */
  async lastLink(address: string, path: '/' | '/admin', route: 'reset' | 'confirm-email'): Promise<string> {
    const token = this.linkIn(await this.last(address), path, route);
    expect(token, `a ${route} link to ${address}`).not.toBeNull();
    return token!;
  }
}
