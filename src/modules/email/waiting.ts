// Mail that cannot leave says so (issue 21): while no mail server is configured, messages are set aside as
// `not_sent` (the outbox does not retry them) and the admin panel shows "N messages waiting: no mail server is
// configured". Once one is configured, the messages set aside for that reason go out: they were waiting, not dropped.
import type { OutboxService } from '../outbox/service.ts';

/** The reason an e-mail is set aside without a mail server; also how the waiting ones are found again. */
export const NO_MAIL_SERVER = 'no mail server is configured (smtp_url in Settings → Mail, or SMTP_URL)';

export interface MailDeliveryStatus {
  smtp_configured: boolean;
  /** Messages not sent yet: waiting for a mail server, or queued and about to go. */
  waiting: number;
}

export function mailWaiting({ outbox, configured }: { outbox: Pick<OutboxService, 'countUndelivered' | 'releaseNotSent'>; configured: () => boolean }) {
  return {
    async deliveryStatus(): Promise<MailDeliveryStatus> {
      return { smtp_configured: configured(), waiting: await outbox.countUndelivered('email') };
    },

    /**
     * Sends the messages that waited for a mail server, once one is configured (after Settings → Mail is saved, and
     * at start). Returns how many were put back in the queue; none while no mail server is configured.
     * `serverSaved`: the caller has just saved a mail server in the transaction this runs in (settings_update), which
     * the settings in force show only once it commits.
     */
    async releaseWaiting(options: { serverSaved?: boolean } = {}): Promise<number> {
      if (options.serverSaved !== true && !configured()) return 0;
      // Also those set aside before this reason had its words ("SMTP_URL is not set").
      return outbox.releaseNotSent('email', [NO_MAIL_SERVER, 'SMTP_URL is not set']);
    },
  };
}
