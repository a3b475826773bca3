// What the very first start prints about the administrator it created: the credentials (only those it generated, so
// a value the operator chose is never echoed into a console log) and where to use them, the admin panel's URL.
import type { FirstAdmin } from './bootstrap.ts';

export interface FirstAdminNoticeOptions {
  /** `PUBLIC_URL` as the config holds it (no trailing slash). */
  publicUrl: string;
  /** TOLLGATE_ADMIN_API_TOKEN was set: the operator knows the token, so it is not printed. */
  apiTokenGiven: boolean;
}

/** The lines printed once, on the first start, when the first administrator was just created. */
export function firstAdminNotice(admin: FirstAdmin, options: FirstAdminNoticeOptions): string[] {
  return [
    'Created the first administrator:',
    `  e-mail:    ${admin.email}`,
    ...(admin.password !== null ? [`  password:  ${admin.password}`] : []),
    ...(options.apiTokenGiven ? [] : [`  API token: ${admin.apiToken}`]),
    // The panel lives at <PUBLIC_URL>/admin (src/web): printed so a newcomer knows where the credentials go.
    `  admin URL: ${options.publicUrl}/admin`,
  ];
}
